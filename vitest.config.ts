import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/buildCli.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Every file runs against real processes, files and sockets it makes and removes itself, and no test
    // mocks modules or mutates process-wide state; sharing loaded modules across files saves each of the
    // ~140 files from evaluating Effect and the program again (about 100 s of a 2-core run).
    isolate: false
  }
})
