import { Cause, Effect, Either, Option, Ref, Stream } from "effect"
import type { Conversation } from "../../domain/Conversation.js"
import { EmptyResponse } from "../../domain/Errors.js"
import { type CompactionReason, type ErrorInfo, errorInfo, type StopReasonValue, type TaskEvent } from "../../domain/Events.js"
import { Otid } from "../../domain/Ids.js"
import type { ToolCall, UserMessage } from "../../domain/Messages.js"
import type { ThinkingLevel } from "../../domain/ProviderEvent.js"
import { isMessage } from "../../domain/ItemLog.js"
import { type Attempts, type Budgets, EMPTY_RESPONSE_REMINDER, type Failure, noAttempts, step as policyStep } from "../../domain/Recovery.js"
import { type Assembly, emptyAssembly, end, partial, step } from "../../domain/RunAssembler.js"
import { turnRetriedText } from "../../domain/Tags.js"
import type { Provider } from "../../services/Provider.js"
import type { NewItem } from "../../domain/History.js"
import type { Store } from "../../services/Store.js"
import type { CompactionOutcome } from "./Compaction.js"
import { compactionTrigger } from "./CompactionTrigger.js"
import type { RunWriter, WriteError } from "./RunWriter.js"

export interface TurnContext {
  readonly store: Store["Type"]
  readonly provider: Provider["Type"]
  readonly writer: RunWriter
  readonly conversation: Conversation
  readonly thinking: ThinkingLevel | undefined
  readonly budgets: Budgets
  /** The announced reconnect wait; ends early on skipReconnectWait. */
  readonly waitRetry: (delayMs: number) => Effect.Effect<void>
  /** Frees the conversation once the stop_reason is committed, before anyone sees it. */
  readonly onStopped: Effect.Effect<void>
  /** True when an interrupt is a user's cancel (recorded) rather than a shutdown (left for the start-up rule). */
  readonly cancelRequested: Effect.Effect<boolean>
  /** Compacts the conversation inside this run (same writer, same stream). */
  readonly compact: (reason: CompactionReason) => Effect.Effect<CompactionOutcome, WriteError>
}

interface TurnState {
  readonly assembly: Assembly
  readonly inRequest: boolean
  readonly attempt: number
  /** Messages of the current request as committed chunks, in order. */
  readonly shown: ReadonlyArray<TaskEvent>
  /** Complete tool calls of failed attempts: they stand, and join the final turn's calls. */
  readonly carried: ReadonlyArray<TaskEvent>
  readonly finished: boolean
}

const messageTypes: ReadonlySet<string> = new Set(["reasoning_message", "assistant_message", "tool_call"])

const stopReasonEvent = (reason: StopReasonValue, error: ErrorInfo | undefined): TaskEvent => ({
  type: "stop_reason",
  reason,
  ...(error !== undefined ? { error } : {})
})

const traceOnly = (events: ReadonlyArray<TaskEvent>): ReadonlyArray<NewItem> => events.map((item) => ({ item, traceOnly: true }))

/**
 * One run: a model request plus its reconnects, ending with exactly one stop_reason. Every decision
 * about a failure comes from the recovery policy; this only carries it out.
 */
export const runTurn = (ctx: TurnContext): Effect.Effect<void, WriteError> =>
  Effect.gen(function*() {
    const { writer } = ctx
    const state = yield* Ref.make<TurnState>({
      assembly: emptyAssembly,
      inRequest: false,
      attempt: 0,
      shown: [],
      carried: [],
      finished: false
    })
    const emitModel = (events: ReadonlyArray<TaskEvent>) =>
      events.length === 0
        ? Effect.void
        : Effect.flatMap(writer.emit(events.map((event) => ({ event }))), (chunks) =>
          Ref.update(state, (s) => ({ ...s, shown: [...s.shown, ...chunks.filter((c) => messageTypes.has(c.type))] })))
    const stop = (
      entries: ReadonlyArray<TaskEvent>,
      stopReason: "end_turn" | "requires_approval" | "max_tokens" | "error" | "auth" | "cancelled",
      before: ReadonlyArray<NewItem>,
      error?: ErrorInfo
    ) =>
      Effect.zipRight(
        Ref.update(state, (s) => ({ ...s, finished: true })),
        writer.emit(
          [...entries, stopReasonEvent(stopReason, error)].map((event) => ({
            event,
            record: "item" as const
          })),
          {
            before,
            finish: {
              status: stopReason === "cancelled" ? "cancelled" : stopReason === "error" || stopReason === "auth" ? "failed" : "completed",
              stopReason,
              onCommitted: ctx.onStopped
            }
          }
        )
      )

    const attemptOnce = (attempt: number, reminder: boolean) =>
      Effect.gen(function*() {
        const context = yield* ctx.store.modelContext(ctx.conversation.id)
        const history = context.flatMap((stored) => (isMessage(stored.item) ? [stored.item] : []))
        const settings = ctx.conversation.settings
        const reminderMessage: UserMessage = { type: "user_message", content: EMPTY_RESPONSE_REMINDER, otid: Otid.make("system-reminder") }
        yield* Ref.update(state, (s) => ({ ...s, assembly: emptyAssembly, inRequest: true, attempt, shown: [] }))
        yield* writer.emit([{ event: { type: "request_begin", attempt }, record: "item" }])
        return yield* ctx.provider.stream({
          ...(settings.model !== undefined ? { model: settings.model } : {}),
          system: settings.system_prompt,
          history: reminder ? [...history, reminderMessage] : history,
          tools: settings.tools,
          ...(settings.max_output_tokens !== undefined ? { maxOutputTokens: settings.max_output_tokens } : {}),
          ...(ctx.thinking !== undefined ? { thinking: ctx.thinking } : {})
        }).pipe(
          Stream.runForEachChunk((events) =>
            Effect.gen(function*() {
              const s = yield* Ref.get(state)
              let assembly = s.assembly
              const out: Array<TaskEvent> = []
              for (const event of events) {
                const [next, emitted] = step(assembly, event)
                assembly = next
                out.push(...emitted)
              }
              yield* Ref.update(state, (current) => ({ ...current, assembly }))
              yield* emitModel(out)
            })
          ),
          Effect.either
        )
      })

    const body = Effect.gen(function*() {
      let attempts: Attempts = noAttempts
      let reminder = false
      const trigger = yield* compactionTrigger(ctx.store, ctx.conversation)
      if (Option.isSome(trigger)) yield* ctx.compact(trigger.value)
      for (let attempt = 0;; attempt++) {
        const streamed = yield* attemptOnce(attempt, reminder)
        let failure: Failure & { readonly message?: string }
        if (Either.isRight(streamed)) {
          const ended = end((yield* Ref.get(state)).assembly)
          yield* Ref.update(state, (s) => ({ ...s, assembly: ended.assembly }))
          if (ended.outcome !== "empty") {
            yield* emitModelClosing(ended.events)
            const s = yield* Ref.get(state)
            // Calls a failed attempt issued still stand: they need results whatever this attempt said.
            const reason = ended.outcome === "tool_calls" || s.carried.length > 0
              ? "requires_approval"
              : ended.outcome === "max_tokens" ? "max_tokens" : "end_turn"
            const usage = ended.events.filter((e) => e.type === "token_usage")
            return yield* stop(
              [...usage, { type: "request_end", status: "ok", attempt }],
              reason,
              [...s.carried, ...s.shown].map((item) => ({ item }))
            )
          }
          yield* emitModelClosing(ended.events.filter((e) => e.type !== "token_usage"))
          failure = new EmptyResponse({ message: "the model returned neither text nor a tool call" })
        } else {
          failure = streamed.left
        }
        const next = policyStep(attempts, failure, ctx.budgets)
        attempts = next.attempts
        const s = yield* Ref.get(state)
        const calls = s.shown.filter((m) => m.type === "tool_call")
        const others = s.shown.filter((m) => m.type !== "tool_call")
        const info = errorInfo(failure)
        if (next.decision._tag === "CompactThenRetry") {
          yield* writer.emit([{ event: { type: "request_end", status: "retrying", attempt, retry_in_ms: 0, error: info }, record: "item" }], {
            before: traceOnly(others)
          })
          yield* Ref.update(state, (current) => ({ ...current, inRequest: false, carried: [...current.carried, ...calls] }))
          yield* ctx.compact("overflow")
          reminder = false
          continue
        }
        if (next.decision._tag !== "Retry") {
          const status = next.decision._tag === "Fail" && next.decision.status === "auth" ? "auth" : "failed"
          return yield* stop(
            [{ type: "request_end", status, attempt, error: info }],
            status === "auth" ? "auth" : "error",
            traceOnly([...s.carried, ...s.shown]),
            info
          )
        }
        const delayMs = next.decision.delayMs
        yield* writer.emit([{ event: { type: "request_end", status: "retrying", attempt, retry_in_ms: delayMs, error: info }, record: "item" }], {
          before: traceOnly(others)
        })
        yield* Ref.update(state, (current) => ({ ...current, inRequest: false, carried: [...current.carried, ...calls] }))
        yield* ctx.waitRetry(delayMs)
        const left = partial(s.assembly)
        const block = left.text.length > 0 || left.toolCalls.length > 0 ? turnRetriedText(left.text, calls as ReadonlyArray<ToolCall>) : ""
        const context: ReadonlyArray<NewItem> = block.length > 0
          ? [{ item: { type: "user_message", content: block, otid: Otid.make(`${writer.runId}-retry-${attempt + 1}`) }, contextOnly: true }]
          : []
        yield* writer.emit([{ event: { type: "turn_retried", attempt: attempt + 1, content: block }, record: "item" }], { after: context })
        reminder = next.decision.reminder
      }
    })

    const emitModelClosing = (events: ReadonlyArray<TaskEvent>) => emitModel(events.filter((e) => e.type !== "token_usage"))

    const onInterrupt = Effect.gen(function*() {
      const s = yield* Ref.get(state)
      if (s.finished || !(yield* ctx.cancelRequested)) return
      // Text still open when the cancel landed was only ever shown as deltas; keep it in the trace.
      const unsaid = s.assembly.text ?? ""
      const partialText: ReadonlyArray<NewItem> = unsaid.length > 0
        ? [{ item: { type: "assistant_message", content: unsaid, run_id: writer.runId }, traceOnly: true }]
        : []
      yield* stop(
        s.inRequest ? [{ type: "request_end", status: "cancelled", attempt: s.attempt }] : [],
        "cancelled",
        [...traceOnly([...s.carried, ...s.shown]), ...partialText]
      ).pipe(Effect.catchAll((e) => Effect.logWarning("could not record the cancelled run", e)))
    })

    // A defect (a bug, a store that broke) still ends the run with a stop_reason, so no reader waits forever.
    const onDefect = (cause: Cause.Cause<unknown>) =>
      Effect.gen(function*() {
        const s = yield* Ref.get(state)
        if (s.finished) return
        const info = { tag: "InternalError", message: Cause.pretty(cause).split("\n")[0] ?? "internal error" }
        yield* Effect.logError("run failed unexpectedly", cause)
        yield* stop(
          s.inRequest ? [{ type: "request_end", status: "failed", attempt: s.attempt, error: info }] : [],
          "error",
          traceOnly([...s.carried, ...s.shown]),
          info
        )
      })

    yield* body.pipe(
      Effect.onInterrupt(() => onInterrupt),
      Effect.catchAllCause((cause) => (Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : onDefect(cause)))
    )
  })
