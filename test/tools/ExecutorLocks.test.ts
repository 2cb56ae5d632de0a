import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scope, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import { toolCall } from "../support/Calls.js"
import { tempDir } from "../support/tempDir.js"
import { fakeTools, makeProbe, settle } from "../support/FakeTools.js"
import { executeBatch } from "../support/Workspace.js"

const setup = Effect.gen(function*() {
  const workspace = yield* tempDir
  const probe = makeProbe()
  const executor = yield* makeToolExecutor({ workspace, tools: fakeTools(probe) })
  return { workspace, probe, executor }
})

describe("ToolExecutor locks (fake tools, no sleeps)", () => {
  it.scoped("two Edits of one file, spelled differently, run one after the other in call order", () =>
    Effect.gen(function*() {
      const { executor, probe, workspace } = yield* setup
      Fs.symlinkSync(workspace, Path.join(workspace, "link"))
      const batch = yield* executeBatch(executor, [
        toolCall("e1", "Edit", { file_path: "a.txt" }),
        toolCall("e2", "Edit", { file_path: "./sub/../a.txt" }),
        toolCall("e3", "Edit", { file_path: "link/a.txt" }),
        toolCall("e4", "Edit", { file_path: Path.join(workspace, "a.txt") }),
        toolCall("other", "Edit", { file_path: "b.txt" })
      ])
      // Later edits are released up front: only the lock can hold them back.
      yield* Effect.forEach(["e2", "e3", "e4"], probe.release)
      yield* Deferred.await(probe.started("e1"))
      yield* Deferred.await(probe.started("other"))
      yield* settle
      assert.deepStrictEqual(probe.log, ["start e1", "start other"], "a write to another file overlaps; same-file writes wait")
      yield* probe.release("e1")
      yield* probe.release("other")
      const results = yield* batch.results
      assert.deepStrictEqual(results.map((r) => r.status), ["success", "success", "success", "success", "success"])
      const sameFile = probe.log.filter((e) => !e.endsWith("other"))
      assert.deepStrictEqual(sameFile, ["start e1", "end e1", "start e2", "end e2", "start e3", "end e3", "start e4", "end e4"])
    }))

  it.scoped("Bash never overlaps anything, and calls that arrive behind it wait for it", () =>
    Effect.gen(function*() {
      const { executor, probe } = yield* setup
      const batch = yield* executeBatch(executor, [
        toolCall("r1", "Read", { file_path: "x" }),
        toolCall("b1", "Bash", { command: "make" }),
        toolCall("r2", "Read", { file_path: "y" }),
        toolCall("w1", "Edit", { file_path: "z" }),
        toolCall("b2", "Bash", { command: "make test" })
      ])
      yield* Deferred.await(probe.started("r1"))
      yield* settle
      assert.deepStrictEqual(probe.log, ["start r1"], "Bash waits for the running Read; later calls queue behind Bash")
      yield* probe.release("r1")
      yield* Deferred.await(probe.started("b1"))
      yield* settle
      assert.deepStrictEqual(probe.log, ["start r1", "end r1", "start b1"])
      yield* probe.release("b1")
      yield* Deferred.await(probe.started("r2"))
      yield* Deferred.await(probe.started("w1"))
      yield* settle
      assert.isFalse(probe.log.includes("start b2"), "the second Bash waits for both")
      yield* probe.release("r2")
      yield* probe.release("w1")
      yield* Deferred.await(probe.started("b2"))
      yield* probe.release("b2")
      yield* batch.results
      assert.deepStrictEqual(probe.overlaps.get("b1"), [])
      assert.deepStrictEqual(probe.overlaps.get("b2"), [])
      for (const [id, running] of probe.overlaps) {
        assert.isFalse(running.includes("b1") || running.includes("b2"), `${id} overlapped a Bash`)
      }
      assert.sameMembers([...probe.overlaps.get("w1")!, ...probe.overlaps.get("r2")!], ["r2"], "read and write overlap")
    }))

  it.scoped("8 Reads run concurrently: all 8 start before any finishes", () =>
    Effect.gen(function*() {
      const { executor, probe } = yield* setup
      const ids = Array.from({ length: 8 }, (_, i) => `r${i}`)
      const batch = yield* executeBatch(executor, ids.map((id) => toolCall(id, "Read", { file_path: `${id}.txt` })))
      yield* Effect.forEach(ids, (id) => Deferred.await(probe.started(id)))
      assert.strictEqual(probe.startedCount(), 8)
      assert.isFalse(probe.log.some((e) => e.startsWith("end ")))
      assert.strictEqual(probe.overlaps.get("r7")!.length, 7)
      yield* Effect.forEach(ids, probe.release)
      const results = yield* batch.results
      assert.deepStrictEqual(results.map((r) => r.output), ids.map((id) => `output of ${id}`))
    }))

  it.scoped("results come in call order, completions in finish order", () =>
    Effect.gen(function*() {
      const { executor, probe } = yield* setup
      const ids = ["r1", "r2", "r3", "r4"]
      const batch = yield* executeBatch(executor, ids.map((id) => toolCall(id, "Read", { file_path: id })))
      const collected = yield* Effect.fork(Stream.runCollect(batch.completions))
      yield* Effect.forEach(ids, (id) => Deferred.await(probe.started(id)))
      for (const id of [...ids].reverse()) {
        yield* probe.release(id)
        yield* settle
      }
      const completions = yield* Fiber.join(collected)
      assert.deepStrictEqual([...completions].map((r) => r.tool_call_id), ["r4", "r3", "r2", "r1"])
      const results = yield* batch.results
      assert.deepStrictEqual(results.map((r) => r.tool_call_id), ids)
    }))

  it.scoped("an interrupted waiter neither leaks its place nor blocks the calls behind it", () =>
    Effect.gen(function*() {
      const { executor, probe } = yield* setup
      const e1 = yield* executor.start(toolCall("e1", "Edit", { file_path: "a" }))
      const e2 = yield* executor.start(toolCall("e2", "Edit", { file_path: "a" }))
      const e3 = yield* executor.start(toolCall("e3", "Edit", { file_path: "a" }))
      const r1 = yield* executor.start(toolCall("r1", "Read", { file_path: "q" }))
      const b1 = yield* executor.start(toolCall("b1", "Bash", { command: "x" }))
      const r2 = yield* executor.start(toolCall("r2", "Read", { file_path: "q" }))
      yield* Deferred.await(probe.started("e1"))
      yield* Deferred.await(probe.started("r1"))
      yield* Fiber.interrupt(e2)
      yield* Fiber.interrupt(b1)
      // The Read behind the interrupted Bash gets in without waiting for anything else.
      yield* Deferred.await(probe.started("r2"))
      yield* Effect.forEach(["e1", "e3", "r1", "r2"], probe.release)
      yield* Fiber.join(e3)
      yield* Effect.forEach([e1, r1, r2], Fiber.join)
      assert.isFalse(probe.log.includes("start e2") || probe.log.includes("start b1"))
      // The locks are free again: a Bash now runs at once.
      const b2 = yield* executor.start(toolCall("b2", "Bash", { command: "y" }))
      yield* Deferred.await(probe.started("b2"))
      yield* probe.release("b2")
      assert.strictEqual((yield* Fiber.join(b2)).status, "success")
    }))

  it.scoped("locks are workspace-wide: two batches (two sessions) share them", () =>
    Effect.gen(function*() {
      const { executor, probe } = yield* setup
      const scopeA = yield* Scope.make()
      const scopeB = yield* Scope.make()
      const a = yield* Scope.extend(executeBatch(executor, [toolCall("a", "Write", { file_path: "f" })]), scopeA)
      const b = yield* Scope.extend(executeBatch(executor, [toolCall("b", "Edit", { file_path: "./f" })]), scopeB)
      yield* probe.release("b")
      yield* Deferred.await(probe.started("a"))
      yield* settle
      assert.deepStrictEqual(probe.log, ["start a"])
      yield* probe.release("a")
      yield* a.results
      yield* b.results
      assert.deepStrictEqual(probe.log, ["start a", "end a", "start b", "end b"])
    }))

  it.scoped("a closed scope interrupts unfinished calls; finished ones keep their output", () =>
    Effect.gen(function*() {
      const { executor, probe } = yield* setup
      const scope = yield* Scope.make()
      const batch = yield* Scope.extend(
        executeBatch(executor, [
          toolCall("done", "Read", { file_path: "a" }),
          toolCall("slow", "Read", { file_path: "b" }),
          toolCall("queued", "Bash", { command: "x" })
        ]),
        scope
      )
      yield* probe.release("done")
      yield* Deferred.await(probe.started("slow"))
      yield* settle
      yield* Scope.close(scope, Exit.void)
      const results = yield* batch.results
      assert.deepStrictEqual(results.map((r) => [r.tool_call_id, r.status, r.output]), [
        ["done", "success", "output of done"],
        ["slow", "interrupted", "[interrupted: tool aborted by user]"],
        ["queued", "interrupted", "[interrupted: tool aborted by user]"]
      ])
      const completions = yield* Stream.runCollect(batch.completions)
      assert.strictEqual(completions.length, 3)
    }))
})
