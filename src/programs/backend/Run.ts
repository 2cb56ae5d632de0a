import { Cause, Effect, Option, Ref } from "effect"
import type { Conversation } from "../../domain/Conversation.js"
import { EmptyResponse, RunnerLost } from "../../domain/Errors.js"
import { type Chunk, type ErrorInfo, errorInfo, type StopReasonValue, type TaskEvent } from "../../domain/Events.js"
import type { NewItem } from "../../domain/History.js"
import { Otid } from "../../domain/Ids.js"
import { isMessage } from "../../domain/ItemLog.js"
import { type UserMessage, withoutImages } from "../../domain/Messages.js"
import { modelRequest } from "../../domain/ModelRequest.js"
import type { ThinkingLevel } from "../../domain/ProviderEvent.js"
import { type Budgets, EMPTY_RESPONSE_REMINDER, type Failure, startingAttempts } from "../../domain/Recovery.js"
import { retry, type Step } from "../../domain/RecoverySchedule.js"
import { type Assembly, emptyAssembly, type Ended, partial } from "../../domain/RunAssembler.js"
import { initial, isToolCall, messageTypes, type RunRecord } from "./RunRecord.js"
import { turnRetriedText } from "../../domain/Tags.js"
import { ATTR, SPAN, spanOptions, withOutcomeSpan } from "../../domain/Telemetry.js"
import { Provider } from "../../services/Provider.js"
import { Store } from "../../services/Store.js"
import { Compactions } from "./Compaction.js"
import { ContextCache, type SegmentView } from "./ContextCache.js"
import { activeRuns } from "./Metrics.js"
import type { EmitOptions, Entry, RunLog } from "./RunLog.js"
import { metered } from "./Metering.js"
import { streamRequest } from "./StreamRequest.js"

/** One run as the conversation's actor starts it. */
export interface RunJob {
  readonly log: RunLog
  readonly conversation: Conversation
  readonly thinking: ThinkingLevel | undefined
  readonly budgets: Budgets
  /** Reconnects the task spent before this run: its budget is the user turn's. */
  readonly reconnectsSpent?: number
  /** The announced reconnect wait; ends early on skipReconnectWait. */
  readonly wait: (delayMs: number) => Effect.Effect<void>
  /** Frees the conversation once the stop_reason is committed, before anyone sees it. */
  readonly onStopped: Effect.Effect<void>
  /** True when an interrupt is a user's cancel (recorded) rather than a shutdown (left for the start-up rule). */
  readonly cancelRequested: Effect.Effect<boolean>
  /**
   * A run another runner was running when it was lost (a cluster takeover): its committed record. A
   * request it left open is reconnected: request_end{retrying} and `[turn_retried]` with what it had
   * shown, as for a dropped connection.
   */
  readonly resumed?: RunRecord
}

const attemptOf = (record: RunRecord) => record.requests - 1

const traceOnly = (events: ReadonlyArray<TaskEvent>): ReadonlyArray<NewItem> => events.map((item) => ({ item, traceOnly: true }))

/**
 * What a run that ends now still has to record: the carried calls, and the open request's messages.
 * Between attempts (a reconnect wait, a compaction) the last request's messages are recorded already:
 * its request_end took the others, and its calls are among the carried ones.
 */
const unrecorded = (r: RunRecord): ReadonlyArray<Chunk> => [...r.carried, ...(r.inRequest ? r.shown : [])]

const stopStatus = (reason: StopReasonValue) =>
  reason === "cancelled" ? "cancelled" as const : reason === "error" || reason === "auth" ? "failed" as const : "completed" as const

/** The run's one writer: each method commits through the run log and updates the record in the same uninterruptible step. */
const makeEmitter = (log: RunLog, record: Ref.Ref<RunRecord>, onStopped: Effect.Effect<void>) => {
  const commit = (entries: ReadonlyArray<Entry>, options: EmitOptions, update: (r: RunRecord, chunks: ReadonlyArray<Chunk>) => RunRecord) =>
    Effect.uninterruptible(Effect.flatMap(log.emit(entries, options), (chunks) => Ref.update(record, (r) => update(r, chunks))))

  return {
    begin: Effect.flatMap(Ref.get(record), (r) =>
      commit([{ event: { type: "request_begin", attempt: r.requests }, record: "item" }], {}, (current) => ({
        ...current,
        assembly: emptyAssembly,
        requests: current.requests + 1,
        inRequest: true,
        shown: []
      }))),

    /** The items of one provider chunk (or the closing ones), streamed but not yet recorded. */
    model: (assembly: Assembly, events: ReadonlyArray<TaskEvent>) =>
      events.length === 0
        ? Ref.update(record, (r) => ({ ...r, assembly }))
        : commit(events.map((event) => ({ event })), {}, (r, chunks) => ({
          ...r,
          assembly,
          shown: [...r.shown, ...chunks.filter((c) => messageTypes.has(c.type))]
        })),

    /** request_end{retrying}: the attempt's messages go to the trace, its tool calls are carried to the final turn. */
    retrying: (step: Step<Failure>, delayMs: number) =>
      Effect.flatMap(Ref.get(record), (r) =>
        commit(
          [{
            event: { type: "request_end", status: "retrying", attempt: attemptOf(r), retry_in_ms: delayMs, error: errorInfo(step.failure) },
            record: "item"
          }],
          { before: traceOnly(r.shown.filter((c) => !isToolCall(c))) },
          (current) => ({
            ...current,
            inRequest: false,
            carried: [...current.carried, ...current.shown.filter(isToolCall)],
            reminder: step.decision._tag === "Retry" && step.decision.reminder
          })
        )),

    /** `[turn_retried]`: what the failed attempt said, as context for the next one, so no tool runs twice. */
    retried: Effect.flatMap(Ref.get(record), (r) => {
      const left = partial(r.assembly)
      const calls = r.shown.filter(isToolCall)
      const block = left.text.length > 0 || left.toolCalls.length > 0 ? turnRetriedText(left.text, calls) : ""
      const context: ReadonlyArray<NewItem> = block.length > 0
        ? [{ item: { type: "user_message", content: block, otid: Otid.make(`${log.runId}-retry-${r.requests}`) }, contextOnly: true }]
        : []
      return commit([{ event: { type: "turn_retried", attempt: r.requests, content: block }, record: "item" }], { after: context }, (current) => current)
    }),

    /** The run's end: the last entries, then its one stop_reason, committed with the run's status. */
    stop: (entries: ReadonlyArray<TaskEvent>, stopReason: StopReasonValue, before: ReadonlyArray<NewItem>, error?: ErrorInfo) =>
      Effect.uninterruptible(Effect.zipRight(
        Ref.update(record, (r) => ({ ...r, finished: true, ...(error !== undefined ? { error } : {}) })),
        log.emit(
          [...entries, { type: "stop_reason", reason: stopReason, ...(error !== undefined ? { error } : {}) } satisfies TaskEvent].map((event) => ({
            event,
            record: "item" as const
          })),
          { before, finish: { status: stopStatus(stopReason), stopReason, onCommitted: onStopped } }
        )
      ))
  }
}

/**
 * The run: one model request plus its reconnects, ending with exactly one stop_reason. Each attempt
 * is a fold of the provider stream into the run log; every decision about a failure comes from the
 * recovery policy (RecoverySchedule.retry), whose hooks announce it, wait and prepare the next attempt.
 */
export class Runs extends Effect.Service<Runs>()("baton/Runs", {
  effect: Effect.gen(function*() {
    const store = yield* Store
    const provider = yield* Provider
    const compactions = yield* Compactions
    const contexts = yield* ContextCache

    // Its span is baton.run (below, with its ids and outcome): a span of the function around it would say nothing more.
    const run = Effect.fnUntraced(function*(job: RunJob) {
      const { conversation, log } = job
      const record = yield* Ref.make(job.resumed ?? initial)
      const lost = yield* Ref.make(job.resumed?.inRequest === true)
      const emitter = makeEmitter(log, record, job.onStopped)
      const meter = metered(provider, store, { conversationId: conversation.id, runId: log.runId, purpose: "turn" }, log.holdUsage)
      // Set by the policy's RetryWithoutImages: the rest of the run's requests carry placeholders instead.
      const imagesDropped = yield* Ref.make(false)
      // Read by the first attempt only (see there).
      let fresh: SegmentView | undefined
      const reminder: UserMessage = { type: "user_message", content: EMPTY_RESPONSE_REMINDER, otid: Otid.make("system-reminder") }

      // A store that breaks outside the provider stream is a defect: the defect path below ends the run.
      const attempt = Effect.gen(function*() {
        if (yield* Ref.getAndSet(lost, false)) {
          return yield* new RunnerLost({ message: "the runner streaming this request stopped; its conversation moved to this one" })
        }
        // Steering held by the backend joins every request it assembles, also the one right after a compaction.
        // Left held until the commit that records it takes it: a crash in between neither loses nor repeats it.
        const steered = yield* Effect.orDie(store.heldSteering(conversation.id))
        if (steered.length > 0) {
          yield* Effect.orDie(log.emit(steered.map((event) => ({ event, record: "item" as const })), { takesSteering: steered.map((m) => m.otid) }))
        }
        // The segment the compaction trigger just read is the context still, unless something was
        // recorded since by this run (steering, a compaction); a writer elsewhere may as well have
        // committed just after this look as just after that one.
        const looked = fresh
        fresh = undefined
        const context = looked !== undefined && steered.length === 0
          ? looked.items.filter((s) => s.inContext)
          : yield* Effect.orDie(contexts.context(conversation.id))
        const history = context.flatMap((stored) => (isMessage(stored.item) ? [stored.item] : []))
        const { reminder: remind } = yield* Ref.get(record)
        yield* Effect.orDie(emitter.begin)
        const sent = (yield* Ref.get(imagesDropped)) ? withoutImages(history) : history
        const request = modelRequest(conversation.settings, remind ? [...sent, reminder] : sent, job.thinking)
        const ended = yield* streamRequest(meter, request, emitter.model)
        // The usage is held back: it is the last model chunk, committed with the request_end.
        yield* Effect.orDie(emitter.model(ended.assembly, ended.events.filter((e) => e.type !== "token_usage")))
        if (ended.outcome === "empty") return yield* new EmptyResponse({ message: "the model returned neither text nor a tool call" })
        return ended
      })

      const answered = (ended: Ended) =>
        Effect.gen(function*() {
          const r = yield* Ref.get(record)
          // Calls a failed attempt issued still stand: they need results whatever this attempt said.
          const reason = ended.outcome === "tool_calls" || r.carried.length > 0
            ? "requires_approval"
            : ended.outcome === "max_tokens" ? "max_tokens" : "end_turn"
          return yield* emitter.stop(
            [...ended.events.filter((e) => e.type === "token_usage"), { type: "request_end", status: "ok", attempt: attemptOf(r) }],
            reason,
            [...r.carried, ...r.shown].map((item) => ({ item }))
          )
        })

      const gaveUp = (failure: Failure, step: Step<Failure>) =>
        Effect.gen(function*() {
          const r = yield* Ref.get(record)
          const status = step.decision._tag === "Fail" && step.decision.status === "auth" ? "auth" : "failed"
          const info = errorInfo(failure)
          return yield* emitter.stop(
            [{ type: "request_end", status, attempt: attemptOf(r), error: info }],
            status === "auth" ? "auth" : "error",
            traceOnly(unrecorded(r)),
            info
          )
        })

      const body = Effect.gen(function*() {
        // A resumed run passed its start-of-turn compaction on its first runner.
        if (job.resumed === undefined) {
          const trigger = yield* compactions.trigger(conversation)
          if (Option.isSome(trigger.reason)) yield* compactions.run({ log, conversation, reason: trigger.reason.value, wait: job.wait })
          else fresh = trigger.view
        }
        const ended = yield* retry(Effect.asSome(attempt), {
          budgets: job.budgets,
          from: startingAttempts(job.reconnectsSpent ?? 0),
          announce: (step, delayMs) => Effect.orDie(emitter.retrying(step, delayMs)),
          wait: job.wait,
          prepare: (step) =>
            step.decision._tag === "CompactThenRetry"
              ? Effect.asVoid(compactions.run({ log, conversation, reason: "overflow", wait: job.wait }))
              : step.decision._tag === "RetryWithoutImages"
              ? Effect.zipRight(Ref.set(imagesDropped, true), Effect.orDie(emitter.retried))
              : Effect.orDie(emitter.retried),
          orElse: (failure, step) => Effect.as(gaveUp(failure, step), Option.none())
        })
        if (Option.isSome(ended)) yield* answered(ended.value)
      })

      const onInterrupt = Effect.gen(function*() {
        const r = yield* Ref.get(record)
        if (r.finished || !(yield* job.cancelRequested)) return
        // Text still open when the cancel landed was only ever shown as deltas; keep it in the trace.
        const unsaid = r.assembly.text ?? ""
        const partialText: ReadonlyArray<NewItem> = unsaid.length > 0
          ? [{ item: { type: "assistant_message", content: unsaid, run_id: log.runId }, traceOnly: true }]
          : []
        yield* emitter.stop(
          r.inRequest ? [{ type: "request_end", status: "cancelled", attempt: attemptOf(r) }] : [],
          "cancelled",
          [...traceOnly(unrecorded(r)), ...partialText]
        ).pipe(Effect.catchAll((e) => Effect.logWarning("could not record the cancelled run", e)))
      })

      // A defect (a bug, a store that broke) still ends the run with a stop_reason, so no reader waits forever.
      const onDefect = (cause: Cause.Cause<unknown>) =>
        Effect.gen(function*() {
          const r = yield* Ref.get(record)
          if (r.finished) return
          const info = { tag: "InternalError", message: Cause.pretty(cause).split("\n")[0] ?? "internal error" }
          yield* Effect.logError("run failed unexpectedly", cause)
          yield* emitter.stop(
            r.inRequest ? [{ type: "request_end", status: "failed", attempt: attemptOf(r), error: info }] : [],
            "error",
            traceOnly(unrecorded(r)),
            info
          )
        })

      const ids = { [ATTR.conversationId]: conversation.id, [ATTR.runId]: log.runId }
      yield* withOutcomeSpan(
        body.pipe(
          Effect.onInterrupt(() => onInterrupt),
          Effect.catchAllCause((cause) => (Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.asVoid(onDefect(cause))))
        ),
        SPAN.run,
        spanOptions(ids),
        () => Effect.map(Ref.get(record), (r) => Option.fromNullable(r.error))
      ).pipe(activeRuns.track)
    })

    return { run } as const
  }),
  dependencies: [Compactions.Default, ContextCache.Default]
}) {}
