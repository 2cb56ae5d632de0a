import { Clock, Deferred, Effect, ExecutionStrategy, FiberSet, Option, Queue, Ref, Scope } from "effect"
import type { ApprovalDecision, TaskEvent } from "../../domain/Events.js"
import { type Otid, type ToolCallId } from "../../domain/Ids.js"
import type { ToolCall, ToolReturn } from "../../domain/Messages.js"
import { toolSpan } from "../../domain/Telemetry.js"
import { toToolReturn } from "../../domain/Tools.js"
import { awaitResult, type ExecuteOptions, type ToolExecutor } from "../../services/ToolExecutor.js"
import { type Approver, deniedText, type Gate } from "./ApprovalGate.js"

/**
 * The tool calls of one model turn, handled eagerly: each is approved the moment it arrives
 * (one at a time, in arrival order) and, if allowed, starts at once on the workspace's executor,
 * while the model may still be streaming. Results stream out as they finish and are committed to
 * the backend at once, each with its decision; `settle` returns them in call order once every call
 * has one and every commit has been tried.
 */
export interface ToolBatch {
  readonly add: (call: ToolCall) => Effect.Effect<void>
  readonly settle: Effect.Effect<ReadonlyArray<ToolReturn>>
  readonly calls: Effect.Effect<ReadonlyArray<ToolCall>>
  readonly decisions: Effect.Effect<ReadonlyArray<ApprovalDecision>>
  /** Decisions whose result the backend has not acknowledged: they go with the next input instead. */
  readonly uncommittedDecisions: Effect.Effect<ReadonlyArray<ApprovalDecision>>
  /** Results that exist now (finished or denied), by call id. */
  readonly finished: Effect.Effect<ReadonlyMap<ToolCallId, ToolReturn>>
  /**
   * Stops the approver and every running tool, and waits until they have stopped: a stopped tool's
   * call gets its `interrupted` result, a call not yet decided none. (Its scope closing stops them too.)
   */
  readonly abort: Effect.Effect<void>
}

/** What every batch of a task is made with (built once per task). */
export interface BatchDeps {
  readonly executor: ToolExecutor["Type"]
  readonly gate: Gate
  readonly approver: Approver | undefined
  readonly emit: (events: ReadonlyArray<TaskEvent>) => Effect.Effect<void>
  readonly otid: Effect.Effect<Otid>
  readonly executeOptions: ExecuteOptions
  /** Commits one result to the backend as its tool finished; true once it is acknowledged. Never fails. */
  readonly commit: (result: ToolReturn, decision: ApprovalDecision) => Effect.Effect<boolean>
}

interface Slot {
  readonly call: ToolCall
  readonly result: Deferred.Deferred<ToolReturn>
  /** Whether the backend acknowledged the result (set once the commit was tried). */
  readonly committed: Deferred.Deferred<boolean>
}

/** Lives in the caller's scope: closing it, like `abort`, interrupts the approver and every running tool. */
export const makeToolBatch = Effect.fn("ToolBatch.make")(function*(deps: BatchDeps) {
  const slots = yield* Ref.make<ReadonlyArray<Slot>>([])
  const decisions = yield* Ref.make<ReadonlyArray<ApprovalDecision>>([])
  const arrivals = yield* Queue.unbounded<Slot>()
  // The tools' own scope closes after the fiber set (finalizers run in reverse): closing the batch
  // interrupts the watchers at once with their tools, so a run that failed shows no result after it.
  const tools = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
  const fibers = yield* FiberSet.make()

  // Shown and recorded in one step: an abort in between would leave a shown result the batch does not know.
  const finish = (slot: Slot, result: ToolReturn) =>
    Effect.uninterruptible(Effect.zipRight(deps.emit([result]), Deferred.succeed(slot.result, result)))

  // Then committed: an abort may cut the commit short, and the carry-over answers the call instead.
  const commit = (slot: Slot, result: ToolReturn, decision: ApprovalDecision) =>
    Effect.flatMap(deps.commit(result, decision), (ok) => Deferred.succeed(slot.committed, ok))

  const handle = (slot: Slot) =>
    Effect.gen(function*() {
      // `execute_tool NAME`: from the approval asked to the result, ended however the call ends.
      const traced = yield* toolSpan(slot.call)
      const decision = yield* deps.gate.decide(slot.call, deps.approver).pipe(
        Effect.withParentSpan(traced.span),
        Effect.onInterrupt(() => traced.end(undefined))
      )
      yield* traced.decided(decision)
      yield* Ref.update(decisions, (all) => [...all, decision])
      yield* deps.emit([decision])
      const otid = yield* deps.otid
      if (decision.decision === "deny") {
        const denied: ToolReturn = { type: "tool_return", tool_call_id: slot.call.tool_call_id, status: "denied", content: deniedText(decision), otid }
        yield* finish(slot, denied)
        yield* traced.end(denied)
        // In its own fiber, so the next call's approval does not wait for the round trip.
        return yield* FiberSet.run(fibers, commit(slot, denied, decision))
      }
      const startedAt = yield* Clock.currentTimeMillis
      const tool = yield* Effect.uninterruptible(
        Effect.tap(Scope.extend(deps.executor.start(slot.call, deps.executeOptions), tools), (fiber) => FiberSet.add(fibers, fiber))
      ).pipe(Effect.withParentSpan(traced.span))
      // Watch the tool in its own fiber so the next call's approval does not wait for this one.
      yield* FiberSet.run(
        fibers,
        Effect.flatMap(awaitResult(slot.call, tool, startedAt), (done) => {
          const result = toToolReturn(done, otid)
          return Effect.zipRight(finish(slot, result), Effect.zipRight(traced.end(result), commit(slot, result, decision)))
        }).pipe(Effect.withParentSpan(traced.span), Effect.ensuring(traced.end(undefined)))
      )
    })

  yield* FiberSet.run(fibers, Queue.take(arrivals).pipe(Effect.flatMap(handle), Effect.forever))

  const finished = Effect.gen(function*() {
    const all = yield* Ref.get(slots)
    const done = new Map<ToolCallId, ToolReturn>()
    for (const slot of all) {
      const result = yield* Deferred.poll(slot.result)
      if (Option.isSome(result)) done.set(slot.call.tool_call_id, yield* result.value)
    }
    return done as ReadonlyMap<ToolCallId, ToolReturn>
  })

  // Untraced, like withToolBatch below: the call's own span (`execute_tool`) starts as it is handled,
  // and a span here would cost every call ~45 Effect steps for a few microseconds of work.
  const add = Effect.fnUntraced(function*(call: ToolCall) {
    const slot: Slot = { call, result: yield* Deferred.make<ToolReturn>(), committed: yield* Deferred.make<boolean>() }
    // A call already in the batch (a stream that repeated its approval request) is
    // asked and run once, and answered once: a second result would fail the next input.
    const fresh = yield* Ref.modify(slots, (all) =>
      all.some((s) => s.call.tool_call_id === call.tool_call_id) ? [false, all] : [true, [...all, slot]])
    if (!fresh) return yield* Effect.logDebug(`tool call ${call.tool_call_id} came again; it is handled once`)
    yield* Queue.offer(arrivals, slot)
  })

  return {
    add,
    settle: Effect.flatMap(Ref.get(slots), (all) =>
      Effect.zipLeft(Effect.forEach(all, (slot) => Deferred.await(slot.result)), Effect.forEach(all, (slot) => Deferred.await(slot.committed)))),
    calls: Effect.map(Ref.get(slots), (all) => all.map((s) => s.call)),
    decisions: Ref.get(decisions),
    uncommittedDecisions: Effect.gen(function*() {
      const committed = new Set<ToolCallId>()
      for (const slot of yield* Ref.get(slots)) {
        const done = yield* Deferred.poll(slot.committed)
        if (Option.isSome(done) && (yield* done.value)) committed.add(slot.call.tool_call_id)
      }
      return (yield* Ref.get(decisions)).filter((d) => !committed.has(d.tool_call_id))
    }),
    finished,
    abort: FiberSet.clear(fibers)
  } satisfies ToolBatch
})

/**
 * The batch of one run, in that run's scope; `current` shows it to an interrupt, and keeps it after the
 * run. No span of its own: the run's (`Task.sendRun`) and the batch's (`ToolBatch.make`) enclose it.
 */
export const withToolBatch = <A, E, R>(
  deps: BatchDeps,
  current: Ref.Ref<Option.Option<ToolBatch>>,
  use: (batch: ToolBatch) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, Exclude<R, Scope.Scope>> =>
  Effect.scoped(Effect.flatMap(makeToolBatch(deps), (batch) => Effect.zipRight(Ref.set(current, Option.some(batch)), use(batch))))
