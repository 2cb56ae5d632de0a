import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Either, Exit, Option, Ref, Scope } from "effect"
import type { ApprovalDecision, TaskEvent } from "../../src/domain/Events.js"
import type { ToolReturn } from "../../src/domain/Messages.js"
import { Otid, ToolCallId } from "../../src/domain/Ids.js"
import { parseRules } from "../../src/domain/Permissions.js"
import { emptyRules } from "../../src/domain/Settings.js"
import { type Approver, makeGate } from "../../src/programs/session/ApprovalGate.js"
import { makeToolBatch, type ToolBatch, withToolBatch } from "../../src/programs/session/ToolBatch.js"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import { toolCall } from "../support/Calls.js"
import { fakeTools, makeProbe, settle } from "../support/FakeTools.js"
import { tempDir } from "../support/tempDir.js"
import { eventually } from "../support/testing.js"

/**
 * A batch over fake tools that run until released: `a` is allowed and starts, `b` waits for an
 * approver that never answers.
 */
const twoCalls = Effect.gen(function*() {
  const probe = makeProbe()
  const executor = yield* makeToolExecutor({ workspace: yield* tempDir, tools: fakeTools(probe) })
  const gate = yield* makeGate(Either.getOrThrow(parseRules(emptyRules)), executor.workspace)
  const asked = yield* Deferred.make<void>()
  const approver: Approver = (request) =>
    request.call.tool_call_id === "a" ? Effect.succeed("allow") : Effect.zipRight(Deferred.succeed(asked, undefined), Effect.never)
  const emitted: Array<TaskEvent> = []
  const committed: Array<[ToolReturn, ApprovalDecision]> = []
  const deps = {
    executor,
    gate,
    approver,
    emit: (events: ReadonlyArray<TaskEvent>) => Effect.sync(() => void emitted.push(...events)),
    otid: Effect.succeed(Otid.make("o")),
    executeOptions: {},
    commit: (result: ToolReturn, decision: ApprovalDecision) => Effect.sync(() => committed.push([result, decision]) > 0)
  }
  const fill = (batch: ToolBatch) =>
    Effect.gen(function*() {
      yield* batch.add(toolCall("a", "Read", { file_path: "a" }))
      yield* batch.add(toolCall("b", "Read", { file_path: "b" }))
      yield* Deferred.await(probe.started("a"))
      yield* Deferred.await(asked)
    })
  return { deps, probe, emitted, committed, fill }
})

const results = (events: ReadonlyArray<TaskEvent>) => events.flatMap((e) => (e.type === "tool_return" ? [e] : []))

describe("ToolBatch", () => {
  it.scoped("each result is committed the moment its tool finishes, with its decision, while others still run", () =>
    Effect.gen(function*() {
      const probe = makeProbe()
      const executor = yield* makeToolExecutor({ workspace: yield* tempDir, tools: fakeTools(probe) })
      const gate = yield* makeGate(Either.getOrThrow(parseRules(emptyRules)), executor.workspace)
      const committed: Array<string> = []
      const refused = ToolCallId.make("c")
      const batch = yield* makeToolBatch({
        executor,
        gate,
        approver: (request) => Effect.succeed(request.call.tool_call_id === "b" ? "deny" : "allow"),
        emit: () => Effect.void,
        otid: Effect.sync(() => Otid.make(crypto.randomUUID())),
        executeOptions: {},
        // The backend refuses c's result: its decision must then go with the next input.
        commit: (result, decision) =>
          Effect.sync(() => {
            committed.push(`${result.tool_call_id}:${result.status}:${decision.decision}`)
            return result.tool_call_id !== refused
          })
      })
      yield* batch.add(toolCall("a", "Read", { file_path: "a" }))
      yield* batch.add(toolCall("b", "Read", { file_path: "b" }))
      yield* batch.add(toolCall("c", "Read", { file_path: "c" }))
      yield* Deferred.await(probe.started("c"))
      yield* probe.release("c")
      yield* eventually(Effect.sync(() => committed.length === 2), "b and c committed")
      assert.deepStrictEqual(committed, ["b:denied:deny", "c:success:allow"], "a still runs; b and c are committed already")
      yield* probe.release("a")
      const results = yield* batch.settle
      assert.deepStrictEqual(results.map((r) => r.tool_call_id), ["a", "b", "c"], "settle answers in call order")
      assert.deepStrictEqual(committed.at(-1), "a:success:allow", "settle returned after the last commit")
      assert.deepStrictEqual((yield* batch.uncommittedDecisions).map((d) => d.tool_call_id), ["c"])
    }))

  it.scoped("abort stops the approver and the running tools and waits for them: nothing is shown after it", () =>
    Effect.gen(function*() {
      const { deps, emitted, fill, probe } = yield* twoCalls
      const batch = yield* makeToolBatch(deps)
      yield* fill(batch)
      yield* batch.abort
      assert.isFalse(probe.running.has("a"), "the tool was stopped before abort returned")
      const shown = emitted.length
      yield* probe.release("a")
      yield* settle
      assert.strictEqual(emitted.length, shown, "no result appears after the abort")
      const finished = yield* batch.finished
      assert.isFalse(finished.has(ToolCallId.make("b")), "the undecided call has no result")
      const a = finished.get(ToolCallId.make("a"))
      assert.isTrue(a === undefined || a.status === "interrupted")
      assert.deepStrictEqual(results(emitted).map((r) => [r.tool_call_id, r.status]), a === undefined ? [] : [["a", "interrupted"]])
      assert.strictEqual(probe.log.includes("end a"), false)
    }))

  it.scoped("closing the run's scope does the same, and the batch stays readable for an interrupt", () =>
    Effect.gen(function*() {
      const { deps, emitted, fill, probe } = yield* twoCalls
      const scope = yield* Scope.make()
      const batch = yield* makeToolBatch(deps).pipe(Scope.extend(scope))
      yield* fill(batch)
      yield* Scope.close(scope, Exit.void)
      assert.isFalse(probe.running.has("a"))
      yield* settle
      assert.deepStrictEqual(results(emitted), [])
      assert.deepStrictEqual((yield* batch.calls).map((c) => c.tool_call_id), ["a", "b"])
      assert.strictEqual((yield* batch.finished).size, 0)
      yield* batch.abort
    }))

  it.scoped("withToolBatch shows the run's batch in `current` and keeps it there after the run", () =>
    Effect.gen(function*() {
      const { deps } = yield* twoCalls
      const current = yield* Ref.make(Option.none<ToolBatch>())
      const inside = yield* withToolBatch(deps, current, (batch) => Effect.map(Ref.get(current), (shown) => Option.contains(shown, batch)))
      assert.isTrue(inside)
      assert.isTrue(Option.isSome(yield* Ref.get(current)))
    }))
})
