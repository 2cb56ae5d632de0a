import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import { isAlive } from "../../src/services/ProcessIdentity.js"
import { toolCall } from "../support/Calls.js"
import { tempDir } from "../support/tempDir.js"
import { awaitFileText } from "../support/Processes.js"
import { executeBatch } from "../support/Workspace.js"

const setup = (limits: { killGraceMs?: number; outputChars?: number } = {}) =>
  Effect.gen(function*() {
    const workspace = yield* tempDir
    const executor = yield* makeToolExecutor({ workspace, limits })
    const run = (args: unknown) =>
      Effect.flatMap(executeBatch(executor, [toolCall("b", "Bash", args)]), (b) => Effect.map(b.results, (r) => r[0]!))
    return { workspace, executor, run }
  })

describe("Bash", () => {
  it.scopedLive("runs in the workspace and reports exit code, stdout and stderr", () =>
    Effect.gen(function*() {
      const { run, workspace } = yield* setup()
      const ok = yield* run({ command: "pwd; echo note >&2", description: "where am I" })
      assert.strictEqual(ok.status, "success")
      assert.strictEqual(ok.exit_code, 0)
      assert.strictEqual(ok.stdout, `${workspace}\n`)
      assert.strictEqual(ok.stderr, "note\n")
      assert.strictEqual(ok.output, `${workspace}\n[stderr]\nnote`)
      const failed = yield* run({ command: "echo partial; ls /nonexistent-dir-for-test; exit 3" })
      assert.strictEqual(failed.status, "error")
      assert.strictEqual(failed.exit_code, 3)
      assert.include(failed.output, "partial")
      assert.include(failed.output, "nonexistent-dir-for-test")
      assert.include(failed.output, "[exit code 3]")
      assert.strictEqual((yield* run({ command: "true" })).output, "(no output)")
    }))

  it.scopedLive("bad arguments are an error result naming the field", () =>
    Effect.gen(function*() {
      const { run } = yield* setup()
      const empty = yield* run({ command: "" })
      assert.strictEqual(empty.status, "error")
      assert.include(empty.output, "command")
      const tooLong = yield* run({ command: "true", timeout: 10_000_000 })
      assert.strictEqual(tooLong.status, "error")
      assert.include(tooLong.output, "timeout")
      assert.include((yield* run({ cmd: "ls" })).output, "cmd: is unexpected")
    }))

  it.scopedLive("a command past its timeout is killed and reported", () =>
    Effect.gen(function*() {
      const { run } = yield* setup({ killGraceMs: 200 })
      const result = yield* run({ command: "echo before; sleep 30", timeout: 300 })
      assert.strictEqual(result.status, "error")
      assert.include(result.output, "before")
      assert.include(result.output, "timed out after 300 ms")
      assert.strictEqual(result.exit_code, 143)
    }))

  it.scopedLive("huge output keeps its head and tail and says how much was cut", () =>
    Effect.gen(function*() {
      const { run } = yield* setup({ outputChars: 2_000 })
      const result = yield* run({ command: "seq 1 100000" })
      assert.strictEqual(result.status, "success")
      assert.isBelow(result.output.length, 2_500)
      assert.match(result.output, /^1\n2\n3\n/)
      assert.match(result.output, /\n100000$/)
      assert.match(result.output, /\[output truncated: \d+ of 588895 characters omitted from the middle; narrow the command/)
    }))

  it.scopedLive("background processes a finished command leaves behind are killed", () =>
    Effect.gen(function*() {
      const { run, workspace } = yield* setup()
      const result = yield* run({ command: "sleep 300 & echo $! > bg.pid; echo started" })
      assert.strictEqual(result.output, "started")
      const pid = Number(yield* awaitFileText(Path.join(workspace, "bg.pid")))
      assert.isFalse(isAlive(pid))
    }))

  it.scopedLive("interrupting a batch kills the Bash process group; a finished Read keeps its output", () =>
    Effect.gen(function*() {
      const { executor, workspace } = yield* setup()
      Fs.writeFileSync(Path.join(workspace, "notes.txt"), "remember the milk\n")
      const scope = yield* Scope.make()
      const batch = yield* Scope.extend(
        executeBatch(executor, [
          toolCall("read", "Read", { file_path: "notes.txt" }),
          toolCall("sleep", "Bash", { command: "sleep 300 & echo $! > child.pid; echo $$ > leader.pid; wait" })
        ]),
        scope
      )
      const leader = Number(yield* awaitFileText(Path.join(workspace, "leader.pid")))
      const child = Number(yield* awaitFileText(Path.join(workspace, "child.pid")))
      assert.isTrue(isAlive(leader) && isAlive(child))
      yield* Scope.close(scope, Exit.void)
      assert.isFalse(isAlive(leader), "the shell is gone")
      assert.isFalse(isAlive(child), "its background child is gone")
      const [read, sleep] = yield* batch.results
      assert.deepStrictEqual([read!.status, read!.output], ["success", "     1\tremember the milk"])
      assert.strictEqual(sleep!.status, "interrupted")
      assert.strictEqual(sleep!.output, "[interrupted: tool aborted by user]")
    }))

  it.scopedLive("a group that ignores SIGTERM is SIGKILLed after the grace period", () =>
    Effect.gen(function*() {
      const { executor, workspace } = yield* setup({ killGraceMs: 200 })
      const scope = yield* Scope.make()
      const fiber = yield* Scope.extend(
        executor.start(toolCall("stubborn", "Bash", { command: "trap '' TERM; sleep 300 & echo $! > child.pid; echo $$ > leader.pid; wait" })),
        scope
      )
      const leader = Number(yield* awaitFileText(Path.join(workspace, "leader.pid")))
      const child = Number(yield* awaitFileText(Path.join(workspace, "child.pid")))
      yield* Scope.close(scope, Exit.void)
      assert.isFalse(isAlive(leader))
      assert.isFalse(isAlive(child))
      assert.isTrue(Exit.isInterrupted(yield* fiber.await))
    }))
})
