import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { TaskEvent } from "../../src/domain/Events.js"
import type { ToolReturn } from "../../src/domain/Messages.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import type { Approver } from "../../src/programs/session/ApprovalGate.js"
import { open } from "../../src/programs/session/Session.js"
import { Backend } from "../../src/services/Backend.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { ToolExecutor } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import { finish, gatedProvider, text } from "../support/serverHarness.js"
import { byType } from "../support/sessionHarness.js"
import { tempDir } from "../support/tempDir.js"

/**
 * Eager tools: a call is approved and run the moment it arrives complete, and its result committed
 * as it finishes, while the model may still be streaming. A task loop that waited for the run's
 * stop_reason before starting its calls would pass every test that lets the model finish first.
 */

const allow: Approver = () => Effect.succeed("allow")

describe("eager tool start", () => {
  it.scopedLive("a tool's result reaches the backend while its run's model stream is still open (no stop_reason yet)", () =>
    Effect.gen(function*() {
      const model = yield* gatedProvider
      const backend = Context.get(yield* Layer.build(layerLocal().pipe(Layer.provide(layerMemory), Layer.provide(model.layer))), Backend)
      const submitted = yield* Deferred.make<ToolReturn>()
      const spy = Backend.of({
        ...backend,
        submitResult: (id, result, options) => Effect.zipRight(Deferred.succeed(submitted, result), backend.submitResult(id, result, options))
      })
      const workspace = Path.join(yield* tempDir, "ws")
      Fs.mkdirSync(workspace)
      Fs.writeFileSync(Path.join(workspace, "a.txt"), "alpha\n")
      const executor = yield* makeToolExecutor({ workspace })
      const session = yield* open({ approver: allow }).pipe(Effect.provideService(Backend, spy), Effect.provideService(ToolExecutor, executor))
      const seen: Array<TaskEvent> = []
      const task = yield* Effect.fork(Stream.runForEach(session.run("what is in a.txt?"), (e) => Effect.sync(() => seen.push(e))))
      // The model sends one complete call, then stalls: no usage, no finish, until the test says so.
      yield* model.emit(
        { _tag: "ToolCallStart", id: "c1", name: "Read" },
        { _tag: "ToolCallEnd", id: "c1", name: "Read", arguments: JSON.stringify({ file_path: "a.txt" }) }
      )
      const result = yield* Deferred.await(submitted).pipe(
        Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("the call's result was not committed while the model stream stayed open") })
      )
      assert.strictEqual(result.tool_call_id, "c1")
      assert.strictEqual(result.status, "success")
      assert.include(result.content, "alpha")
      assert.deepStrictEqual(byType(seen, "stop_reason"), [], "the run has not stopped yet")
      // The model finishes its turn; the next request answers.
      yield* model.emit({ _tag: "Finish", reason: "tool_calls" }, ...text("It says alpha."), ...finish)
      yield* Fiber.join(task)
      assert.deepStrictEqual(byType(seen, "stop_reason").map((s) => s.reason), ["requires_approval", "end_turn"])
      assert.strictEqual(yield* model.calls, 2)
    }))
})
