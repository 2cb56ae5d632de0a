import { createRequire } from "node:module"

/** Set by scripts/build.mjs (esbuild `define`) to package.json's version; absent when running from source. */
declare const BATON_VERSION: string | undefined

/**
 * Baton's version, with package.json as its one source: built into dist/ (so the CLI never reads a
 * file to print it), read from package.json when the sources run directly (tests, tsx).
 */
export const VERSION: string = typeof BATON_VERSION === "string"
  ? BATON_VERSION
  : (createRequire(import.meta.url)("../../package.json") as { readonly version: string }).version
