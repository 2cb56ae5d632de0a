import { Effect, Either, Option, Ref, Stream } from "effect"
import { planSlidingWindow } from "../../domain/Compaction.js"
import type { Conversation } from "../../domain/Conversation.js"
import { type Chunk, type CompactionReason, type ErrorInfo, errorInfo, type TaskEvent } from "../../domain/Events.js"
import { Otid, type RunId } from "../../domain/Ids.js"
import type { Message, ToolReturn, UserMessage } from "../../domain/Messages.js"
import { isMessage } from "../../domain/ItemLog.js"
import { type Attempts, compactionBudgets, noAttempts, step as policyStep } from "../../domain/Recovery.js"
import { emptyAssembly, end, partial, step, toolCallsOf } from "../../domain/RunAssembler.js"
import { extract, wrap } from "../../domain/Tags.js"
import type { Provider } from "../../services/Provider.js"
import type { StoredItem } from "../../domain/History.js"
import type { NewItem } from "../../domain/History.js"
import type { Store } from "../../services/Store.js"
import type { RunWriter, WriteError } from "./RunWriter.js"

export interface CompactionContext {
  readonly store: Store["Type"]
  readonly provider: Provider["Type"]
  readonly writer: RunWriter
  readonly conversation: Conversation
  readonly reason: CompactionReason
  readonly waitRetry: (delayMs: number) => Effect.Effect<void>
}

export type CompactionOutcome = "ok" | "failed"

const MAX_INVALID_SUMMARIES = 5
const STRAY_CALL_TEXT = "Tools are unavailable while the conversation is being summarized. Reply with the summary only, wrapped as [summary]…[/summary]."
const isAssistantSide = (item: TaskEvent) => item.type === "assistant_message" || item.type === "reasoning_message" || item.type === "tool_call"

/**
 * Splits the model context for compaction: `tail` is this run's own input (it must follow the summary,
 * not be summarized away); `keep` is a trailing assistant turn whose tool calls that input answers
 * (a call must never lose its result); `older` is what may be summarized.
 */
export const splitContext = (context: ReadonlyArray<StoredItem>, runId: RunId) => {
  const firstOwn = context.findIndex((s) => s.item.run_id === runId)
  const head = firstOwn < 0 ? context : context.slice(0, firstOwn)
  const tail = firstOwn < 0 ? [] : context.slice(firstOwn)
  let turnStart = head.length
  if (head.at(-1)?.item.type === "tool_call") {
    while (turnStart > 0 && isAssistantSide(head[turnStart - 1]!.item)) turnStart--
  }
  return { older: head.slice(0, turnStart), keep: head.slice(turnStart), tail }
}

const copy = (stored: StoredItem): NewItem => ({ item: stored.item, ...(stored.inTrace ? {} : { contextOnly: true }) })

/** Compaction as a transaction: either a new segment that starts with the summary, or nothing changed. */
export const runCompaction = (ctx: CompactionContext): Effect.Effect<CompactionOutcome, WriteError> =>
  Effect.gen(function*() {
    const { conversation, writer } = ctx
    const settings = conversation.settings.compaction
    const shown = yield* Ref.make<ReadonlyArray<Chunk>>([])
    const emit = (events: ReadonlyArray<TaskEvent>) =>
      Effect.tap(writer.emit(events.map((event) => ({ event }))), (chunks) => Ref.update(shown, (all) => [...all, ...chunks]))
    const recorded = Effect.map(Ref.get(shown), (all) =>
      all.filter((c) => c.type === "compaction_begin" || c.type === "request_begin" || c.type === "request_end").map((item): NewItem => ({ item })))
    const failed = (error: ErrorInfo) =>
      Effect.gen(function*() {
        yield* writer.emit([{ event: { type: "compaction_end", status: "failed", error }, record: "item" }], { before: yield* recorded })
        return "failed" as const
      })

    yield* emit([{ type: "compaction_begin", reason: ctx.reason, mode: settings.mode }])
    const context = yield* ctx.store.modelContext(conversation.id)
    const { keep, older, tail } = splitContext(context, writer.runId)
    if (older.length === 0) return yield* failed({ tag: "NothingToCompact", message: "there is nothing to summarize yet" })

    let toSummarize = older
    let kept: ReadonlyArray<StoredItem> = []
    if (settings.mode === "sliding_window") {
      const plan = planSlidingWindow(older.map((s) => s.item), settings.contextWindow ?? (settings.maxContextLength > 0 ? settings.maxContextLength : undefined))
      if (Option.isSome(plan)) {
        toSummarize = older.slice(0, plan.value.cut)
        kept = older.slice(plan.value.cut)
      }
    }

    let summary: string | undefined
    if (settings.mode !== "discard") {
      const asked = yield* askForSummary(ctx, toSummarize.flatMap((s) => (isMessage(s.item) ? [s.item] : [])), emit)
      if (Either.isLeft(asked)) return yield* failed(asked.left)
      summary = asked.right
    }
    const segment = (yield* ctx.store.currentSegment(conversation.id)) + 1
    const summaryItems: ReadonlyArray<NewItem> = summary === undefined ? [] : [{
      item: { type: "user_message", content: wrap("context_summary", summary), otid: Otid.make(`${writer.runId}-summary`) },
      contextOnly: true
    }]
    const entries: ReadonlyArray<TaskEvent> = [
      { type: "compaction_end", status: "ok", segment },
      ...(summary !== undefined ? [{ type: "summary_message" as const, content: summary }] : [])
    ]
    yield* writer.emit(entries.map((event) => ({ event, record: "item" as const })), {
      before: yield* recorded,
      after: [...summaryItems, ...[...kept, ...keep, ...tail].map(copy)],
      newSegment: true
    })
    return "ok" as const
  })

/** One summary, with its own budgets: transport failures reconnect (3 times), invalid answers are re-asked at once (5 times). */
const askForSummary = (
  ctx: CompactionContext,
  history: ReadonlyArray<Message>,
  emit: (events: ReadonlyArray<TaskEvent>) => Effect.Effect<ReadonlyArray<Chunk>, WriteError>
) =>
  Effect.gen(function*() {
    const settings = ctx.conversation.settings
    const prompt: UserMessage = { type: "user_message", content: settings.compaction.prompt, otid: Otid.make(`${ctx.writer.runId}-compact`) }
    let extra: ReadonlyArray<Message> = []
    let invalid = 0
    let attempts: Attempts = noAttempts
    for (let attempt = 0;; attempt++) {
      yield* emit([{ type: "request_begin", attempt, purpose: "compaction" }])
      const assembly = yield* Ref.make(emptyAssembly)
      const streamed = yield* ctx.provider.stream({
        ...(settings.model !== undefined ? { model: settings.model } : {}),
        system: settings.system_prompt,
        history: [...history, prompt, ...extra],
        tools: settings.tools,
        ...(settings.max_output_tokens !== undefined ? { maxOutputTokens: settings.max_output_tokens } : {})
      }).pipe(
        Stream.runForEach((event) =>
          Effect.flatMap(Ref.modify(assembly, (s) => {
            const [next, out] = step(s, event)
            return [out, next] as const
          }), (out) => (out.length > 0 ? emit(out) : Effect.void))),
        Effect.either
      )
      if (Either.isLeft(streamed)) {
        const error = streamed.left
        const next = policyStep(attempts, error, compactionBudgets)
        attempts = next.attempts
        const info = errorInfo(error)
        if (next.decision._tag !== "Retry") {
          yield* emit([{ type: "request_end", status: "failed", attempt, error: info }])
          return Either.left(info)
        }
        yield* emit([{ type: "request_end", status: "retrying", attempt, retry_in_ms: next.decision.delayMs, error: info }])
        yield* ctx.waitRetry(next.decision.delayMs)
        continue
      }
      const ended = end(yield* Ref.get(assembly))
      yield* emit(ended.events)
      const calls = toolCallsOf(ended.assembly)
      const text = partial(ended.assembly).text
      const summary = extract("summary", text) ?? text.trim()
      if (calls.length === 0 && summary.length > 0) {
        yield* emit([{ type: "request_end", status: "ok", attempt }])
        return Either.right(summary)
      }
      invalid++
      const info = {
        tag: "InvalidSummary",
        message: calls.length > 0 ? `the summary called ${calls.length} tool(s)` : "the summary was empty"
      }
      if (invalid >= MAX_INVALID_SUMMARIES) {
        yield* emit([{ type: "request_end", status: "failed", attempt, error: info }])
        return Either.left({ tag: "InvalidSummary", message: `no valid summary after ${MAX_INVALID_SUMMARIES} attempts (${info.message})` })
      }
      yield* emit([{ type: "request_end", status: "retrying", attempt, retry_in_ms: 0, error: info }])
      // Stray calls are answered (pairs stay intact) and the request goes again at once: it is the model's mistake, not the network's.
      const answers: ReadonlyArray<ToolReturn> = calls.map((call) => ({
        type: "tool_return",
        tool_call_id: call.tool_call_id,
        status: "error",
        content: STRAY_CALL_TEXT,
        otid: Otid.make(`${ctx.writer.runId}-stray-${call.tool_call_id}`)
      }))
      const said: ReadonlyArray<Message> = text.length > 0 ? [{ type: "assistant_message", content: text }] : []
      const nudge: ReadonlyArray<Message> = calls.length === 0
        ? [{ type: "user_message", content: STRAY_CALL_TEXT, otid: Otid.make(`${ctx.writer.runId}-nudge-${attempt}`) }]
        : []
      extra = [...extra, ...said, ...calls, ...answers, ...nudge]
    }
  })
