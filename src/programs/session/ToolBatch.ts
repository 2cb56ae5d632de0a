import { Deferred, Effect, Exit, Fiber, Option, Queue, Ref, type Scope } from "effect"
import type { ApprovalDecision, TaskEvent } from "../../domain/Events.js"
import { type Otid, type ToolCallId } from "../../domain/Ids.js"
import { DENIED_TEXT, type ToolCall, type ToolReturn } from "../../domain/Messages.js"
import { interruptedResult, toToolReturn } from "../../domain/Tools.js"
import type { ExecuteOptions, ToolExecutor } from "../../services/ToolExecutor.js"
import type { Approver, Gate } from "./ApprovalGate.js"

/**
 * The tool calls of one model turn, handled eagerly: each is approved the moment it arrives
 * (one at a time, in arrival order) and, if allowed, starts at once on the workspace's executor,
 * while the model may still be streaming. Results stream out as they finish; `settle` returns
 * them in call order once every call has one.
 */
export interface ToolBatch {
  readonly add: (call: ToolCall) => Effect.Effect<void>
  readonly settle: Effect.Effect<ReadonlyArray<ToolReturn>>
  readonly calls: Effect.Effect<ReadonlyArray<ToolCall>>
  readonly decisions: Effect.Effect<ReadonlyArray<ApprovalDecision>>
  /** Results that exist now (finished or denied), by call id. */
  readonly finished: Effect.Effect<ReadonlyMap<ToolCallId, ToolReturn>>
}

export interface BatchDeps {
  readonly executor: ToolExecutor["Type"]
  readonly gate: Gate
  readonly approver: Approver | undefined
  readonly emit: (events: ReadonlyArray<TaskEvent>) => Effect.Effect<void>
  readonly otid: Effect.Effect<Otid>
  readonly options: ExecuteOptions
}

interface Slot {
  readonly call: ToolCall
  readonly result: Deferred.Deferred<ToolReturn>
}

/** Lives in the caller's scope: closing it interrupts the approver and every running tool. */
export const makeToolBatch = (deps: BatchDeps): Effect.Effect<ToolBatch, never, Scope.Scope> =>
  Effect.gen(function*() {
    const slots = yield* Ref.make<ReadonlyArray<Slot>>([])
    const decisions = yield* Ref.make<ReadonlyArray<ApprovalDecision>>([])
    const arrivals = yield* Queue.unbounded<Slot>()

    const finish = (slot: Slot, result: ToolReturn) =>
      Effect.zipRight(deps.emit([result]), Deferred.succeed(slot.result, result))

    const handle = (slot: Slot) =>
      Effect.gen(function*() {
        const decision = yield* deps.gate.decide(slot.call, deps.approver)
        yield* Ref.update(decisions, (all) => [...all, decision])
        yield* deps.emit([decision])
        const otid = yield* deps.otid
        if (decision.decision === "deny") {
          return yield* finish(slot, {
            type: "tool_return",
            tool_call_id: slot.call.tool_call_id,
            status: "denied",
            content: DENIED_TEXT,
            otid
          })
        }
        const fiber = yield* deps.executor.start(slot.call, deps.options)
        // Watch the tool in its own fiber so the next call's approval does not wait for this one.
        yield* Fiber.await(fiber).pipe(
          Effect.flatMap((exit) =>
            finish(slot, toToolReturn(Exit.isSuccess(exit) ? exit.value : interruptedResult(slot.call.tool_call_id), otid))
          ),
          Effect.forkScoped
        )
      })

    yield* Queue.take(arrivals).pipe(Effect.flatMap(handle), Effect.forever, Effect.forkScoped)

    const finished = Effect.gen(function*() {
      const all = yield* Ref.get(slots)
      const done = new Map<ToolCallId, ToolReturn>()
      for (const slot of all) {
        const result = yield* Deferred.poll(slot.result)
        if (Option.isSome(result)) done.set(slot.call.tool_call_id, yield* result.value)
      }
      return done as ReadonlyMap<ToolCallId, ToolReturn>
    })

    return {
      add: (call) =>
        Effect.gen(function*() {
          const slot = { call, result: yield* Deferred.make<ToolReturn>() }
          yield* Ref.update(slots, (all) => [...all, slot])
          yield* Queue.offer(arrivals, slot)
        }),
      settle: Effect.flatMap(Ref.get(slots), (all) => Effect.forEach(all, (slot) => Deferred.await(slot.result))),
      calls: Effect.map(Ref.get(slots), (all) => all.map((s) => s.call)),
      decisions: Ref.get(decisions),
      finished
    }
  })
