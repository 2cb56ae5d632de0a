import { Effect, Either, Option, Ref, Stream } from "effect"
import type { CarryOver } from "../../domain/CarryOver.js"
import type { BackendError } from "../../domain/Errors.js"
import type { ApprovalDecision, Chunk, StopReasonValue } from "../../domain/Events.js"
import type { ConversationId, Otid } from "../../domain/Ids.js"
import type { InputMessage, ToolCall, ToolReturn, UserMessage } from "../../domain/Messages.js"
import type { ThinkingLevel } from "../../domain/ProviderEvent.js"
import { afterGivingUp, type Budgets, reconnectsCarried, turnBudgets } from "../../domain/Recovery.js"
import { retry } from "../../domain/RecoverySchedule.js"
import { ATTR, SPAN, spanOptions, withOutcomeSpan } from "../../domain/Telemetry.js"
import { STALE_APPROVAL_REASON, turnAbortedText } from "../../domain/Tags.js"
import type { Backend } from "../../services/Backend.js"
import { followRun, pendingCalls } from "./Resume.js"
import * as TaskProgress from "./TaskProgress.js"
import { type BatchDeps, type ToolBatch, withToolBatch } from "./ToolBatch.js"

/** One task's world, built once per task; the task is its own batches' dependencies. */
export interface TaskDeps extends BatchDeps {
  readonly backend: Backend["Type"]
  /** Brings the conversation's tool list up to the executor's; run before every send. */
  readonly syncTools: Effect.Effect<void, BackendError>
  readonly conversationId: ConversationId
  readonly maxTurns: number
  readonly thinking: ThinkingLevel | undefined
  /** Where the task stands, for an interrupt and a resumed stream. */
  readonly progress: Ref.Ref<TaskProgress.TaskProgress>
  /** The latest run's batch (kept after its run: its results are unsent until the next run). */
  readonly batch: Ref.Ref<Option.Option<ToolBatch>>
  /**
   * At the end of a turn: closes the steering queue (a steer that comes later returns false instead
   * of being silently dropped) and takes what the backend still holds (no request drained it yet).
   * Steering itself is held and drained by the backend, at every input assembly.
   */
  readonly drainOrClose: Effect.Effect<ReadonlyArray<UserMessage>>
  /** The client's own waits (a busy conversation, a broken stream): ended early by skipReconnectWait. */
  readonly wait: (delayMs: number) => Effect.Effect<void>
}

/** The task's next run: what it sends, and which turn it is. */
interface NextRun {
  readonly input: ReadonlyArray<InputMessage>
  readonly events: ReadonlyArray<ApprovalDecision>
  readonly turn: number
  /** The backend said approvals are pending that the task did not know of: close them first. */
  readonly closeStale: boolean
  /** A task that re-runs the conversation as it stands (after an auth or error stop): sent while the input is empty. */
  readonly retry?: Otid
}

/** How a run ended, read inside its scope while its batch lived. */
interface RunEnd {
  readonly stop: StopReasonValue
  readonly calls: ReadonlyArray<ToolCall>
  /** Every call's result in call order, when the next step needs them (else empty). */
  readonly results: ReadonlyArray<ToolReturn>
  /** Decisions not committed with their results: the next input records them. */
  readonly decisions: ReadonlyArray<ApprovalDecision>
}

/** How the task ends: what to leave the backend, and whether it ran out of turns. */
interface Ending {
  readonly carryOver?: CarryOver
  readonly maxTurns: boolean
}

/**
 * What the task recovers from, for the whole task: a busy conversation (waited for, 3 times) and a
 * stale pending approval (closed once, so a desync can never loop). Everything else was its run's
 * to recover from, so the policy ends the task with it.
 */
const taskBudgets: Budgets = {
  ...turnBudgets,
  reconnects: 0,
  overflowCompactions: 0,
  emptyRetries: 0,
  invalidSummaryRetries: 0,
  storeBusyRetries: 0
}

/**
 * Reads one stream of a run into the task, a batch (what one read brought) at a time: forwards its
 * chunks in one emit, feeds its tool calls to the batch, returns the stop reason seen. token_usage
 * waits for its request_end, so the two reach the task stream together, never split by a tool result.
 */
const readRun = (deps: TaskDeps, batch: ToolBatch) => (chunks: Stream.Stream<Chunk, BackendError>) =>
  Effect.suspend(() => {
    let usage: Chunk | undefined
    let stop = Option.none<StopReasonValue>()
    return chunks.pipe(
      Stream.runForEachChunk((input) => {
        const group: Array<Chunk> = []
        for (const chunk of input) {
          if (usage !== undefined) group.push(usage)
          usage = chunk.type === "token_usage" ? chunk : undefined
          if (usage !== undefined) continue
          group.push(chunk)
          if (chunk.type === "stop_reason") stop = Option.some(chunk.reason)
        }
        if (group.length === 0) return Effect.void
        // A compaction's summary request may stream stray tool calls: they are answered there, never run here.
        return Ref.modify(deps.progress, (progress) => {
          const calls: Array<ToolCall> = []
          let next = progress
          for (const chunk of group) {
            next = TaskProgress.step(next, chunk)
            if (chunk.type === "tool_call" && !next.compacting) calls.push(chunk)
          }
          return [calls, next] as const
        }).pipe(
          Effect.tap(() => deps.emit(group)),
          Effect.flatMap((calls) => Effect.forEach(calls, (call) => batch.add(call), { discard: true }))
        )
      }),
      Effect.map(() => stop)
    )
  })

/** One run in its own scope: sent, read to its stop reason (resumed if its stream breaks), its batch settled if needed. */
const sendRun = Effect.fn("Task.sendRun")(function*(deps: TaskDeps, run: NextRun) {
  return yield* withToolBatch(deps, deps.batch, (batch) =>
    Effect.gen(function*() {
      const progress = yield* Ref.updateAndGet(deps.progress, (progress) => TaskProgress.sending(progress, run.input))
      const spent = reconnectsCarried(progress.reconnectsSpent, taskBudgets)
      yield* deps.syncTools
      const chunks = deps.backend.send(deps.conversationId, {
        messages: run.input,
        events: run.events,
        ...(deps.thinking !== undefined ? { thinking: deps.thinking } : {}),
        ...(run.retry !== undefined && run.input.length === 0 ? { retry: run.retry } : {}),
        ...(spent > 0 ? { reconnects_spent: spent } : {})
      })
      const stop = yield* followRun(deps, chunks, readRun(deps, batch))
      const calls = yield* batch.calls
      const results = stop === "requires_approval" || calls.length > 0 ? yield* batch.settle : []
      return { stop, calls, results, decisions: yield* batch.uncommittedDecisions } satisfies RunEnd
    }))
})

/** What follows a run: the next one (its steering drained and shown), or the task's end. */
const afterRun = (deps: TaskDeps, run: NextRun, end: RunEnd): Effect.Effect<Either.Either<Ending, NextRun>, BackendError> =>
  Effect.gen(function*() {
    if (end.stop === "requires_approval") {
      if (run.turn >= deps.maxTurns) return Either.right({ carryOver: { results: end.results, events: end.decisions }, maxTurns: true })
      return Either.left({ input: end.results, events: end.decisions, turn: run.turn + 1, closeStale: false })
    }
    if (end.calls.length > 0) {
      // Calls a failed request issued may have run already; tell the model what they did.
      const text = turnAbortedText(
        "",
        end.calls.map((call) => ({ call, output: end.results.find((r) => r.tool_call_id === call.tool_call_id)?.content })),
        "Your previous request failed after issuing tool calls; they were handled as follows."
      )
      // The results too: a run whose process died leaves its calls pending, and they are answered here.
      const carryOver: CarryOver = { results: end.results, turnAborted: text, events: end.decisions }
      const lastError = (yield* Ref.get(deps.progress)).lastError
      if (end.stop !== "error" || afterGivingUp(lastError?.tag, end.calls.length, taskBudgets) === "end" || run.turn >= deps.maxTurns) {
        return Either.right({ carryOver, maxTurns: false })
      }
      // The calls were progress: recorded as carry-over, then the conversation is run again as it stands.
      yield* deps.backend.cancel(deps.conversationId, carryOver)
      return Either.left({ input: [], events: [], turn: run.turn + 1, closeStale: false, retry: yield* deps.otid })
    }
    if (end.stop !== "end_turn") return Either.right({ maxTurns: false })
    const more = yield* deps.drainOrClose
    if (more.length === 0) return Either.right({ maxTurns: false })
    if (run.turn >= deps.maxTurns) return Either.right({ maxTurns: true })
    // Steering that arrived as the model finished continues the task instead of ending it.
    yield* deps.emit(more)
    return Either.left({ input: more, events: [], turn: run.turn + 1, closeStale: false })
  })

/** Closes the approvals the backend holds pending with Letta's desync denial, and sends those instead of the old results. */
const closeStaleApprovals = (deps: TaskDeps, run: NextRun) =>
  Effect.gen(function*() {
    const pending = yield* deps.backend.pendingApprovals(deps.conversationId)
    const closed = yield* Effect.forEach(pending, (call) =>
      Effect.map(deps.otid, (otid) => ({
        decision: {
          type: "approval_decision",
          tool_call_id: call.tool_call_id,
          decision: "deny",
          source: "recovery",
          reason: STALE_APPROVAL_REASON
        } satisfies ApprovalDecision,
        result: { type: "tool_return", tool_call_id: call.tool_call_id, status: "denied", content: STALE_APPROVAL_REASON, otid } satisfies ToolReturn
      })))
    yield* deps.emit(closed.flatMap((c) => [c.decision, c.result]))
    return {
      ...run,
      input: [...closed.map((c) => c.result), ...run.input.filter((m) => m.type === "user_message")],
      events: [...run.events, ...closed.map((c) => c.decision)],
      closeStale: false
    } satisfies NextRun
  })

/** The turns from `next` on, until one ends the task; `next` always holds the run to (re)send. */
const turns = (deps: TaskDeps, next: Ref.Ref<NextRun>) =>
  Effect.gen(function*() {
    const stored = yield* Ref.get(next)
    const run = stored.closeStale ? yield* closeStaleApprovals(deps, stored) : stored
    yield* Ref.set(next, run)
    const after = yield* afterRun(deps, run, yield* sendRun(deps, run))
    if (Either.isLeft(after)) yield* Ref.set(next, after.left)
    return after
  }).pipe(Effect.repeat({ until: Either.isRight }), Effect.map((after) => Either.getOrThrow(after)))

/**
 * A whole task, the approval loop: runs until the model answers without tool calls (or the turns
 * run out), each run's tool results and queued steering making the next run's input. With `rerun`
 * and no prompt, its first run re-runs the conversation on its current context.
 */
export const runTask = Effect.fn("Task.run")(function*(deps: TaskDeps, prompt: ReadonlyArray<UserMessage>, rerun?: Otid) {
  const resumed = yield* pendingCalls(deps)
  const next = yield* Ref.make<NextRun>({
    input: [...resumed.results, ...prompt],
    events: resumed.decisions,
    turn: 1,
    closeStale: false,
    ...(rerun !== undefined ? { retry: rerun } : {})
  })
  // A retry sends `next` again: the failed run's input, or the stale approvals' denials instead.
  const ending = yield* retry(turns(deps, next), {
    budgets: taskBudgets,
    announce: (step, delayMs) =>
      step.decision._tag === "WaitBusy" ? deps.emit([{ type: "wait", reason: "busy", retry_in_ms: delayMs }]) : Effect.void,
    wait: deps.wait,
    prepare: (step) =>
      step.decision._tag === "ResolveStaleApproval" ? Ref.update(next, (run) => ({ ...run, closeStale: true })) : Effect.void,
    orElse: (failure) => Effect.fail(failure)
  })
  if (ending.carryOver !== undefined) yield* deps.backend.cancel(deps.conversationId, ending.carryOver)
  if (ending.maxTurns) yield* deps.emit([{ type: "stop_reason", reason: "max_turns" }])
}, (task, deps) =>
  // Failed when its last run stopped with an error. Not annotateSpans for the ids: every span under
  // the task (one per commit among them) would pay for them.
  withOutcomeSpan(
    task,
    SPAN.task,
    spanOptions({ [ATTR.conversationId]: deps.conversationId }),
    () => Effect.map(Ref.get(deps.progress), (progress) => Option.fromNullable(progress.lastError))
  ))
