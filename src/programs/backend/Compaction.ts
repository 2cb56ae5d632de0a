import { Effect, Either, Option, Ref } from "effect"
import { type Compactability, compactionTrigger, imageTokensOf, planCompaction } from "../../domain/Compaction.js"
import type { Conversation } from "../../domain/Conversation.js"
import { InvalidSummary } from "../../domain/Errors.js"
import { type Chunk, type CompactionReason, type ErrorInfo, errorInfo, type TaskEvent } from "../../domain/Events.js"
import type { NewItem, StoredItem } from "../../domain/History.js"
import { Otid, type RunId } from "../../domain/Ids.js"
import { isMessage } from "../../domain/ItemLog.js"
import type { Message, ToolReturn, UserMessage } from "../../domain/Messages.js"
import { modelRequest } from "../../domain/ModelRequest.js"
import { compactionBudgets } from "../../domain/Recovery.js"
import { retry } from "../../domain/RecoverySchedule.js"
import { ATTR, SPAN, spanOptions, withOutcomeSpan } from "../../domain/Telemetry.js"
import { type Assembly, emptyAssembly, partial, toolCallsOf } from "../../domain/RunAssembler.js"
import { extract, wrap } from "../../domain/Tags.js"
import { Provider } from "../../services/Provider.js"
import { Store } from "../../services/Store.js"
import type { RunLog, WriteError } from "./RunLog.js"
import { ContextCache } from "./ContextCache.js"
import { metered } from "./Metering.js"
import { streamRequest } from "./StreamRequest.js"

/** One compaction, inside a run or as the conversation's job: its chunks go to `log`. */
export interface CompactionJob {
  readonly log: RunLog
  readonly conversation: Conversation
  readonly reason: CompactionReason
  /** The announced reconnect wait; ends early on skipReconnectWait. */
  readonly wait: (delayMs: number) => Effect.Effect<void>
}

export type CompactionOutcome = "ok" | "failed"

/** What this compaction has committed, and what its next summary request adds after the prompt. */
interface CompactionRecord {
  readonly shown: ReadonlyArray<Chunk>
  /** The last summary request's answer. */
  readonly answer: Assembly
  /** Earlier invalid answers and what answered them. */
  readonly extra: ReadonlyArray<Message>
}

const STRAY_CALL_TEXT = "Tools are unavailable while the conversation is being summarized. Reply with the summary only, wrapped as [summary]…[/summary]."

const requestsOf = (record: CompactionRecord) => record.shown.filter((c) => c.type === "request_begin").length

const copy = (stored: StoredItem): NewItem => ({ item: stored.item, ...(stored.inTrace ? {} : { contextOnly: true }) })

/** An invalid answer, as the next request sees it: stray calls answered (pairs stay intact), or a nudge after an empty one. */
const strayAnswers = (runId: RunId, answer: Assembly, attempt: number): ReadonlyArray<Message> => {
  const calls = toolCallsOf(answer)
  const text = partial(answer).text
  const answers: ReadonlyArray<ToolReturn> = calls.map((call) => ({
    type: "tool_return",
    tool_call_id: call.tool_call_id,
    status: "error",
    content: STRAY_CALL_TEXT,
    otid: Otid.make(`${runId}-stray-${call.tool_call_id}`)
  }))
  const said: ReadonlyArray<Message> = text.length > 0 ? [{ type: "assistant_message", content: text }] : []
  const nudge: ReadonlyArray<Message> = calls.length === 0
    ? [{ type: "user_message", content: STRAY_CALL_TEXT, otid: Otid.make(`${runId}-nudge-${attempt}`) }]
    : []
  return [...said, ...calls, ...answers, ...nudge]
}

/** The compaction's one writer: commits through the run log and keeps the record in the same uninterruptible step. */
const makeRecorder = Effect.fn("Compactions.recorder")(function*(log: RunLog) {
  const record = yield* Ref.make<CompactionRecord>({ shown: [], answer: emptyAssembly, extra: [] })
  const commit = (events: ReadonlyArray<TaskEvent>, answer?: Assembly): Effect.Effect<void, WriteError> =>
    Effect.uninterruptible(Effect.gen(function*() {
      const chunks = events.length > 0 ? yield* log.emit(events.map((event) => ({ event }))) : []
      yield* Ref.update(record, (r) => ({ ...r, shown: [...r.shown, ...chunks], answer: answer ?? r.answer }))
    }))
  return {
    record,
    /** For the provider stream's chunks: a failed commit there is a failure the policy sees (terminal). */
    commit,
    // Anywhere else a store that breaks is a defect: the run (or the compaction job) ends on it.
    emit: (events: ReadonlyArray<TaskEvent>, answer?: Assembly) => Effect.orDie(commit(events, answer)),
    /** The attempt of the current summary request. */
    current: Effect.map(Ref.get(record), (r) => requestsOf(r) - 1),
    /** The compaction's begin and request events, recorded with its end. */
    recorded: Effect.map(Ref.get(record), (r) =>
      r.shown.filter((c) => c.type === "compaction_begin" || c.type === "request_begin" || c.type === "request_end").map((item): NewItem => ({ item })))
  }
})

type Recorder = Effect.Effect.Success<ReturnType<typeof makeRecorder>>

/**
 * Compaction as a transaction: either a new segment that starts with the summary, or nothing changed.
 * Also when to compact (`trigger`) and whether it can run now (`compactability`).
 */
export class Compactions extends Effect.Service<Compactions>()("baton/Compactions", {
  effect: Effect.gen(function*() {
    const store = yield* Store
    const provider = yield* Provider
    const contexts = yield* ContextCache

    /**
     * One summary, with its own budgets: transport failures reconnect (3 times), invalid answers are
     * re-asked at once (5 answers in all), the model's mistake rather than the network's.
     */
    const summarize = (job: CompactionJob, history: ReadonlyArray<Message>, recorder: Recorder) => {
      const { runId } = job.log
      const settings = job.conversation.settings
      const prompt: UserMessage = { type: "user_message", content: settings.compaction.prompt, otid: Otid.make(`${runId}-compact`) }
      const attempt = Effect.gen(function*() {
        const r = yield* Ref.get(recorder.record)
        yield* recorder.emit([{ type: "request_begin", attempt: requestsOf(r), purpose: "compaction" }], emptyAssembly)
        const request = modelRequest(settings, [...history, prompt, ...r.extra])
        const meter = metered(provider, store, { conversationId: job.conversation.id, runId, purpose: "compaction" }, job.log.holdUsage)
        const ended = yield* streamRequest(meter, request, (answer, events) => recorder.commit(events, answer))
        yield* recorder.emit(ended.events, ended.assembly)
        const calls = toolCallsOf(ended.assembly)
        const text = partial(ended.assembly).text
        const summary = extract("summary", text) ?? text.trim()
        if (calls.length > 0 || summary.length === 0) {
          return yield* new InvalidSummary({
            toolCalls: calls.length,
            message: calls.length > 0 ? `the summary called ${calls.length} tool(s)` : "the summary was empty"
          })
        }
        yield* recorder.emit([{ type: "request_end", status: "ok", attempt: requestsOf(r) }])
        return Either.right(summary)
      })
      return retry(attempt, {
        budgets: compactionBudgets,
        announce: (step, delayMs) =>
          Effect.flatMap(recorder.current, (n) =>
            recorder.emit([{ type: "request_end", status: "retrying", attempt: n, retry_in_ms: delayMs, error: errorInfo(step.failure) }])),
        // An invalid answer is asked again at once (a 0 ms wait): no timer at all.
        wait: (delayMs) => (delayMs > 0 ? job.wait(delayMs) : Effect.void),
        prepare: (step) =>
          step.failure._tag === "InvalidSummary"
            ? Ref.update(recorder.record, (r) => ({ ...r, extra: [...r.extra, ...strayAnswers(runId, r.answer, requestsOf(r) - 1)] }))
            : Effect.void,
        orElse: (failure, step) =>
          Effect.gen(function*() {
            const info = errorInfo(failure)
            yield* recorder.emit([{ type: "request_end", status: "failed", attempt: yield* recorder.current, error: info }])
            return Either.left(
              failure._tag === "InvalidSummary"
                ? { tag: "InvalidSummary", message: `no valid summary after ${step.attempt + 1} attempts (${info.message})` }
                : info
            )
          })
      })
    }

    const run = Effect.fn("Compactions.run")(function*(job: CompactionJob) {
      const { conversation, log } = job
      const settings = conversation.settings.compaction
      const recorder = yield* makeRecorder(log)
      const failed = (error: ErrorInfo) =>
        Effect.gen(function*() {
          yield* Effect.orDie(log.emit([{ event: { type: "compaction_end", status: "failed", error }, record: "item" }], { before: yield* recorder.recorded }))
          return "failed" as const
        })

      yield* recorder.emit([{ type: "compaction_begin", reason: job.reason, mode: settings.mode }])
      const context = yield* Effect.orDie(contexts.context(conversation.id))
      const plan = planCompaction(context, log.runId, settings)
      if (Option.isNone(plan)) return yield* failed({ tag: "NothingToCompact", message: "there is nothing to summarize yet" })

      let summary: string | undefined
      if (settings.mode !== "discard") {
        const history = plan.value.summarize.flatMap((s) => (isMessage(s.item) ? [s.item] : []))
        const asked = yield* summarize(job, history, recorder)
        if (Either.isLeft(asked)) return yield* failed(asked.left)
        summary = asked.right
      }
      const segment = (yield* Effect.orDie(store.currentSegment(conversation.id))) + 1
      const summaryItems: ReadonlyArray<NewItem> = summary === undefined ? [] : [{
        item: { type: "user_message", content: wrap("context_summary", summary), otid: Otid.make(`${log.runId}-summary`) },
        contextOnly: true
      }]
      const entries: ReadonlyArray<TaskEvent> = [
        { type: "compaction_end", status: "ok", segment },
        ...(summary !== undefined ? [{ type: "summary_message" as const, content: summary }] : [])
      ]
      yield* Effect.orDie(log.emit(entries.map((event) => ({ event, record: "item" as const })), {
        before: yield* recorder.recorded,
        after: [...summaryItems, ...plan.value.keep.map(copy)],
        newSegment: true
      }))
      return "ok" as const
    }, (compaction, job) =>
      withOutcomeSpan(
        compaction,
        SPAN.compaction,
        spanOptions({ [ATTR.conversationId]: job.conversation.id, [ATTR.runId]: job.log.runId, [ATTR.compactionReason]: job.reason }),
        (outcome) => Effect.succeed(outcome === "failed" ? Option.some({ tag: "CompactionFailed", message: "the compaction failed; the old context stays" }) : Option.none())
      ))

    /** Whether to compact before the turn, and the segment it looked at (the turn's context, when nothing is recorded in between). */
    const trigger = Effect.fn("Compactions.trigger")(function*(conversation: Conversation) {
      const view = yield* contexts.segment(conversation.id)
      return { reason: compactionTrigger(view.items, conversation.settings, imageTokensOf(provider.info?.name)), view }
    })

    /**
     * Can a compaction run now: `unsupported` while a job is active (compaction is a transaction of the
     * conversation and waits for it), `empty` with nothing in context, `just_compacted` when nothing
     * happened since the last one.
     */
    const compactability = Effect.fn("Compactions.compactability")(function*(conversation: Conversation, busy: boolean) {
      if (busy) return "busy" as Compactability
      const { items } = yield* contexts.segment(conversation.id)
      if (!items.some((s) => s.inContext)) return "empty" as Compactability
      const compacted = items.some((s) => s.item.type === "compaction_end" && s.item.status === "ok")
      const since = items.filter((s) => s.item.type === "request_begin" && s.item.purpose !== "compaction").length
      return (compacted && since === 0 ? "just_compacted" : "ok") as Compactability
    })

    return { run, trigger, compactability } as const
  }),
  dependencies: [ContextCache.Default]
}) {}
