import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { TaskEvent } from "../../src/domain/Events.js"
import * as PE from "../../src/domain/ProviderError.js"
import { turnBudgets } from "../../src/domain/Recovery.js"
import type { Approver } from "../../src/programs/session/ApprovalGate.js"
import { open } from "../../src/programs/session/Session.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { layerScripted, ProviderScript, type ScriptEntry, Turn } from "../../src/services/provider/Scripted.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { ToolExecutor } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import { byType } from "../support/sessionHarness.js"
import { tempDir } from "../support/tempDir.js"
import { collect } from "../support/testing.js"

/**
 * One reconnect budget per user turn, through a Session over the local backend and a flaky scripted
 * model. The ladder starts at 1 ms (the backend's own budgets), so the waits are real but short; the
 * policy's shape is the default's: 5 reconnects, doubling.
 */
const allow: Approver = () => Effect.succeed("allow")
const down = (n: number) => Turn.fail(new PE.ProviderServerError({ status: 503, message: `down ${n}` }))
const listing = [{ id: "c1", name: "LS", args: {} }]

const flaky = (script: ReadonlyArray<ScriptEntry>) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const executor = yield* makeToolExecutor({ workspace: yield* tempDir })
    return layerLocal({ budgets: { ...turnBudgets, baseMs: 1 } }).pipe(
      Layer.provideMerge(layerScripted(script)),
      Layer.provide(layerMemory),
      Layer.provideMerge(Layer.succeed(ToolExecutor, executor))
    )
  }))

const retries = (events: ReadonlyArray<TaskEvent>) =>
  events.flatMap((e) => (e.type === "request_end" && e.status === "retrying" ? [e.retry_in_ms ?? -1] : []))

const stops = (events: ReadonlyArray<TaskEvent>) => byType(events, "stop_reason").map((e) => e.reason)

describe("one reconnect budget per user turn", () => {
  it.scopedLive("an approval continuation goes on with what the turn has left: 3 spent, then 2 more, then the task stops", () =>
    Effect.gen(function*() {
      const session = yield* open({ approver: allow })
      const events = yield* collect(session.run("list the files"))
      // The second run's ladder continues the first's (8, 16 ms), and its third failure is the turn's sixth.
      assert.deepStrictEqual(retries(events), [1, 2, 4, 8, 16])
      assert.deepStrictEqual(stops(events), ["requires_approval", "error"])
      assert.strictEqual((yield* (yield* ProviderScript).requests).length, 7)
    }).pipe(Effect.provide(flaky([down(1), down(2), down(3), Turn.toolCalls(listing), down(4), down(5), down(6), Turn.text("done")]))))

  it.scopedLive("a run that gives up after its model issued a call: the call runs, its result goes with another attempt, the task ends well", () =>
    Effect.gen(function*() {
      const session = yield* open({ approver: allow })
      const events = yield* collect(session.run("list the files"))
      assert.deepStrictEqual(retries(events), [1, 2, 4, 8, 16])
      assert.deepStrictEqual(stops(events), ["error", "end_turn"])
      assert.strictEqual(byType(events, "tool_return").filter((r) => r.tool_call_id === "c1").length, 1, "the call ran once")
      const requests = yield* (yield* ProviderScript).requests
      assert.strictEqual(requests.length, 7)
      const carried = JSON.stringify(requests[6]!.history)
      assert.include(carried, "failed after issuing tool calls")
      assert.include(carried, "You had called LS")
      assert.strictEqual(byType(events, "assistant_message").at(-1)?.content, "done")
    }).pipe(Effect.provide(flaky([
      // The call is complete (start, arguments, end) when the connection drops; every reconnect fails.
      Turn.cut(Turn.toolCalls(listing), 3, new PE.ProviderConnectionLost({ message: "reset" })),
      down(1),
      down(2),
      down(3),
      down(4),
      down(5),
      Turn.text("done")
    ]))))

  it.scopedLive("a run that gives up without issuing calls still ends the task", () =>
    Effect.gen(function*() {
      const session = yield* open({ approver: allow })
      const events = yield* collect(session.run("hello"))
      assert.deepStrictEqual(stops(events), ["error"])
      assert.strictEqual((yield* (yield* ProviderScript).requests).length, 6)
    }).pipe(Effect.provide(flaky([down(0), down(1), down(2), down(3), down(4), down(5), Turn.text("never")]))))
})
