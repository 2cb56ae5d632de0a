/** Kept equal to package.json's version by test/Cli.test.ts (the bundle must not read package.json). */
export const VERSION = "0.1.0"
