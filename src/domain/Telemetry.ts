import { Clock, Context, Effect, Exit, Option } from "effect"
import * as Tracer from "effect/Tracer"
import type { ApprovalDecision } from "./Events.js"
import type { ToolCall, ToolReturn } from "./Messages.js"

/**
 * What Baton tells a tracing backend: the names of its spans and attributes (the OpenTelemetry GenAI
 * conventions where they have one: `chat MODEL`, `execute_tool TOOL`, `gen_ai.*`; Baton's own under
 * `baton.*`), and whether prompts and tool contents may go with them. Spans are Effect's own
 * (effect/Tracer), so this module stays pure: which exporter receives them, if any, is the
 * composition root's choice (programs/cli/Layers.ts `telemetry`).
 */

export const SPAN = {
  task: "baton.task",
  run: "baton.run",
  compaction: "baton.compaction",
  storeCommit: "baton.store.commit",
  chat: (model: string) => `chat ${model}`,
  tool: (name: string) => `execute_tool ${name}`
} as const

export const ATTR = {
  conversationId: "baton.conversation_id",
  runId: "baton.run_id",
  seq: "baton.seq",
  rows: "baton.store.rows",
  bytes: "baton.store.bytes",
  approvalDecision: "baton.approval.decision",
  approvalSource: "baton.approval.source",
  toolStatus: "baton.tool.status",
  stopReason: "baton.stop_reason",
  compactionReason: "baton.compaction.reason",
  operation: "gen_ai.operation.name",
  provider: "gen_ai.provider.name",
  requestModel: "gen_ai.request.model",
  responseModel: "gen_ai.response.model",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  finishReasons: "gen_ai.response.finish_reasons",
  toolName: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  toolArguments: "gen_ai.tool.call.arguments",
  toolResult: "gen_ai.tool.call.result",
  inputMessages: "gen_ai.input.messages",
  outputMessages: "gen_ai.output.messages",
  systemInstructions: "gen_ai.system_instructions",
  errorType: "error.type"
} as const

/**
 * A parent that makes the spans under it roots: work that outlives any request (a server's listener)
 * runs under it, so each request starts its own trace instead of joining one as long as the process.
 */
export const noParentSpan: Tracer.AnySpan = Tracer.externalSpan({
  traceId: "00000000000000000000000000000000",
  spanId: "0000000000000000",
  sampled: false,
  context: Context.make(Tracer.DisablePropagation, true)
})

/** The span event of one retry the recovery policy decided on. */
export const RETRY_EVENT = "baton.retry"

/**
 * Whether spans and metrics go anywhere (an exporter is installed) and whether contents may go with
 * the spans. Off by default: a program that never installs telemetry pays nothing for the work only
 * an exporter needs (commit spans and sizes, contents, per-chunk counts).
 */
export class Telemetry extends Context.Reference<Telemetry>()("baton/Telemetry", {
  defaultValue: (): TelemetrySettings => ({ tracing: false, metrics: false, content: false })
}) {}

export interface TelemetrySettings {
  /** Spans are exported. */
  readonly tracing: boolean
  /** Metrics are exported. */
  readonly metrics: boolean
  /** Prompts, model output and tool arguments and results go with the spans (`BATON_OTEL_CONTENT=1`). */
  readonly content: boolean
}

/** Span options of Baton's own spans: no stack trace (it costs an Error per span and says nothing here). */
export const spanOptions = (attributes: Record<string, unknown>, kind: Tracer.SpanKind = "internal"): Tracer.SpanOptions => ({
  attributes,
  kind,
  captureStackTrace: false
})

/** A failure to show on a span that ended without one in Effect's terms (a run that recorded its error). */
export class SpanFailure extends Error {
  constructor(readonly tag: string, message: string) {
    super(message)
    this.name = tag
  }
}

/**
 * `self` in a span whose status also reports what `self` recorded rather than raised: `failure`
 * reads, once `self` has succeeded, the error it ended with (a run that stopped with `error`), and
 * the span ends as failed with it. The value and the failures of `self` pass through unchanged.
 */
export const withOutcomeSpan = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  name: string,
  options: Tracer.SpanOptions,
  failure: (a: A) => Effect.Effect<Option.Option<{ readonly tag: string; readonly message: string }>>
): Effect.Effect<A, E, Exclude<R, Tracer.ParentSpan>> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.makeSpan(name, options), (span) =>
      Effect.onExit(restore(Effect.withParentSpan(self, span)), (exit) =>
        Effect.gen(function*() {
          const failed = Exit.isSuccess(exit) ? yield* failure(exit.value) : Option.none()
          const end = yield* Clock.currentTimeNanos
          if (Option.isSome(failed)) span.attribute(ATTR.errorType, failed.value.tag)
          span.end(end, Option.isSome(failed) ? Exit.fail(new SpanFailure(failed.value.tag, failed.value.message)) : exit)
        })))
  )

/** An event on the current span, if there is one (a retry, an approval). */
export const spanEvent = (name: string, attributes: Record<string, unknown>): Effect.Effect<void> =>
  Effect.flatMap(Effect.option(Effect.currentSpan), (span) =>
    Option.isNone(span) ? Effect.void : Effect.map(Clock.currentTimeNanos, (now) => span.value.event(name, now, attributes)))

/** One tool call's span, opened when its approval is asked and ended once with its result, across fibers. */
export interface ToolSpan {
  readonly span: Tracer.Span
  readonly decided: (decision: ApprovalDecision) => Effect.Effect<void>
  /** Ends the span with the call's result (or, without one, as it stands: a call stopped before it had one). */
  readonly end: (result: ToolReturn | undefined) => Effect.Effect<void>
}

export const toolSpan = (call: ToolCall): Effect.Effect<ToolSpan> =>
  Effect.gen(function*() {
    const { content } = yield* Telemetry
    const span = yield* Effect.makeSpan(SPAN.tool(call.name), spanOptions({
      [ATTR.operation]: "execute_tool",
      [ATTR.toolName]: call.name,
      [ATTR.toolCallId]: call.tool_call_id,
      ...(content ? { [ATTR.toolArguments]: call.arguments } : {})
    }))
    let open = true
    return {
      span,
      decided: (decision) =>
        Effect.gen(function*() {
          span.attribute(ATTR.approvalDecision, decision.decision)
          span.attribute(ATTR.approvalSource, decision.source)
          if (decision.rule !== undefined) span.attribute("baton.approval.rule", decision.rule)
          span.event("baton.approval", yield* Clock.currentTimeNanos, { [ATTR.approvalDecision]: decision.decision, [ATTR.approvalSource]: decision.source })
        }),
      end: (result) =>
        Effect.flatMap(Clock.currentTimeNanos, (now) =>
          Effect.sync(() => {
            if (!open) return
            open = false
            if (result !== undefined) {
              span.attribute(ATTR.toolStatus, result.status)
              if (content) span.attribute(ATTR.toolResult, result.content)
              if (result.status === "error") span.attribute(ATTR.errorType, "ToolError")
            }
            // A tool's error is the model's to read, not a fault of Baton's; the status still says it failed.
            span.end(now, result?.status === "error" ? Exit.fail(new SpanFailure("ToolError", `${call.name} reported an error`)) : Exit.void)
          }))
    }
  })
