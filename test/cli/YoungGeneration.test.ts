import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { youngGenerationLimitMb } from "../../src/programs/cli/YoungGeneration.js"
import { cliDirs, ROOT, runCli } from "../support/cliProcess.js"

/**
 * The young generation stops growing at the cap (a command's peak memory is mostly new space).
 * Measured in child processes: V8's flags are process-wide, and the test runner's own heap is not
 * under test. The built module (dist/lib) and the built CLI, which vitest's global setup builds.
 */

const MB = 1024 * 1024
const NEW_SPACE = "const ns = () => require('node:v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size"

/** A child that caps (or not) and then allocates, keeping a share alive, in async slices as a command does. */
const allocating = (limitMb: number) =>
  Effect.async<number>((resume) => {
    const script = `
      import { createRequire } from "node:module"
      const require = createRequire(import.meta.url)
      import { capYoungGeneration } from ${JSON.stringify(Path.join(ROOT, "dist", "lib", "programs", "cli", "YoungGeneration.js"))}
      ${NEW_SPACE}
      capYoungGeneration(${limitMb}, process.versions.v8)
      const kept = []
      for (let slice = 0; slice < 200; slice++) {
        for (let i = 0; i < 20000; i++) { const o = { slice, i, text: "x" + i }; if (i % 4 === 0) kept.push(o) }
        if (kept.length > 400000) kept.length = 0
        await new Promise((r) => setImmediate(r))
      }
      process.stdout.write(String(ns()))
    `
    execFile(process.execPath, ["--input-type=module", "-e", script], (error, stdout) =>
      resume(error === null ? Effect.succeed(Number(stdout)) : Effect.die(error)))
  })

describe("the young generation's cap", () => {
  it.effect("stops the new space growing once it reaches the cap; without one V8 grows it further", () =>
    Effect.gen(function*() {
      const [capped, free] = yield* Effect.all([allocating(4), allocating(0)], { concurrency: 2 })
      assert.isAtMost(capped, 4 * MB)
      assert.isAbove(free, 4 * MB)
    }), { timeout: 60_000 })

  it.scoped("a task command ends with at most 8 MB of new space", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const preload = Path.join(dirs.root, "new-space.cjs")
      Fs.writeFileSync(preload, `${NEW_SPACE}\nprocess.on("exit", () => require("node:fs").writeSync(2, "new space " + ns() + "\\n"))\n`)
      const result = yield* runCli(["sessions", "list"], { env: { BATON_HOME: dirs.home, NODE_OPTIONS: `--require ${preload}` } })
      assert.strictEqual(result.code, 0, result.stderr)
      const bytes = Number(/new space (\d+)/.exec(result.stderr)?.[1])
      assert.isAtMost(bytes, 8 * MB)
    }), { timeout: 60_000 })

  it("the servers keep V8's own sizing", () => {
    assert.strictEqual(youngGenerationLimitMb(["serve"]), 0)
    assert.strictEqual(youngGenerationLimitMb(["web", "--port", "0"]), 0)
    assert.strictEqual(youngGenerationLimitMb(["run", "hi"]), 8)
    assert.strictEqual(youngGenerationLimitMb(["sessions", "list"]), 8)
  })
})
