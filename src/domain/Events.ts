import { Schema } from "effect"
import { RunId, Seq, ToolCallId } from "./Ids.js"
import {
  AssistantMessage,
  Envelope,
  ReasoningMessage,
  SummaryMessage,
  ToolCall,
  ToolReturn,
  UserMessage
} from "./Messages.js"

/**
 * src/domain/ holds Baton's vocabulary as pure data and pure functions, and nothing else (it imports
 * only `effect` and itself; test/Architecture.test.ts keeps it so): ids, messages and the events a
 * task streams (this module), conversations and settings, the tagged errors, the recovery policy and
 * its Schedule (Recovery, RecoverySchedule), approval rules (Permissions), resource keys, compaction
 * planning, the model-request builder (ModelRequest), the run assembler, carry-over, and the rules of
 * tool results committed as they finish (ToolResults).
 */

/** A failure as carried on the stream: its tag and a human message. */
export const ErrorInfo = Schema.Struct({ tag: Schema.String, message: Schema.String })
export type ErrorInfo = typeof ErrorInfo.Type

export const errorInfo = (failure: { readonly _tag: string; readonly message?: string }): ErrorInfo => ({
  tag: failure._tag,
  message: failure.message ?? failure._tag
})

export const RequestPurpose = Schema.Literal("turn", "compaction")

export const RequestBegin = Schema.Struct({
  type: Schema.tag("request_begin"),
  /** 0 for the first request of a run, n for its n-th reconnect. */
  attempt: Schema.NonNegativeInt,
  purpose: Schema.optionalWith(RequestPurpose, { exact: true }),
  ...Envelope
})
export type RequestBegin = typeof RequestBegin.Type

export const RequestEndStatus = Schema.Literal("ok", "retrying", "failed", "auth", "cancelled")
export type RequestEndStatus = typeof RequestEndStatus.Type

export const RequestEnd = Schema.Struct({
  type: Schema.tag("request_end"),
  status: RequestEndStatus,
  attempt: Schema.NonNegativeInt,
  /** Announced wait before the next attempt (status `retrying`). */
  retry_in_ms: Schema.optionalWith(Schema.NonNegativeInt, { exact: true }),
  error: Schema.optionalWith(ErrorInfo, { exact: true }),
  ...Envelope
})
export type RequestEnd = typeof RequestEnd.Type

export const TokenUsage = Schema.Struct({
  type: Schema.tag("token_usage"),
  input_tokens: Schema.NonNegativeInt,
  output_tokens: Schema.NonNegativeInt,
  cached_input_tokens: Schema.NonNegativeInt,
  total_tokens: Schema.NonNegativeInt,
  ...Envelope
})
export type TokenUsage = typeof TokenUsage.Type

export const Decision = Schema.Literal("allow", "allow_always", "deny")
export type Decision = typeof Decision.Type

/** Who decided: a settings rule, a session grant, the user, the no-approver default, or desync recovery. */
export const DecisionSource = Schema.Literal("rule", "session", "user", "default", "recovery")
export type DecisionSource = typeof DecisionSource.Type

export const ApprovalDecision = Schema.Struct({
  type: Schema.tag("approval_decision"),
  tool_call_id: ToolCallId,
  decision: Decision,
  source: DecisionSource,
  /** The rule that matched, or the grant "allow always" added. */
  rule: Schema.optionalWith(Schema.String, { exact: true }),
  reason: Schema.optionalWith(Schema.String, { exact: true }),
  ...Envelope
})
export type ApprovalDecision = typeof ApprovalDecision.Type

/**
 * A call that waits for an answer from a page or another host (`baton web`): its approver emits this
 * and waits; the call's approval_decision follows once someone answers.
 */
export const ApprovalRequest = Schema.Struct({
  type: Schema.tag("approval_request"),
  tool_call_id: ToolCallId,
  name: Schema.String,
  /** The raw JSON arguments, as in the tool_call. */
  arguments: Schema.String,
  /** What "allow always" would grant, e.g. `Bash(npm test:*)`. */
  grant: Schema.String,
  ...Envelope
})
export type ApprovalRequest = typeof ApprovalRequest.Type

export const TurnRetried = Schema.Struct({
  type: Schema.tag("turn_retried"),
  attempt: Schema.Int.pipe(Schema.positive()),
  /** The `[turn_retried]…[/turn_retried]` block added to the resent input. */
  content: Schema.String,
  ...Envelope
})
export type TurnRetried = typeof TurnRetried.Type

export const StopReasonValue = Schema.Literal(
  "end_turn",
  "requires_approval",
  "max_turns",
  "max_tokens",
  "cancelled",
  "error",
  "auth"
)
export type StopReasonValue = typeof StopReasonValue.Type

export const StopReason = Schema.Struct({
  type: Schema.tag("stop_reason"),
  reason: StopReasonValue,
  error: Schema.optionalWith(ErrorInfo, { exact: true }),
  ...Envelope
})
export type StopReason = typeof StopReason.Type

export const CompactionReason = Schema.Literal("context", "turns", "manual", "preflight", "overflow")
export type CompactionReason = typeof CompactionReason.Type

export const CompactionMode = Schema.Literal("summarize", "discard", "sliding_window")
export type CompactionMode = typeof CompactionMode.Type

export const CompactionBegin = Schema.Struct({
  type: Schema.tag("compaction_begin"),
  reason: CompactionReason,
  mode: CompactionMode,
  ...Envelope
})
export type CompactionBegin = typeof CompactionBegin.Type

export const CompactionEnd = Schema.Struct({
  type: Schema.tag("compaction_end"),
  status: Schema.Literal("ok", "failed"),
  /** The trace segment the conversation continues in. */
  segment: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }),
  error: Schema.optionalWith(ErrorInfo, { exact: true }),
  ...Envelope
})
export type CompactionEnd = typeof CompactionEnd.Type

export const Abort = Schema.Struct({
  type: Schema.tag("abort"),
  reason: Schema.optionalWith(Schema.String, { exact: true }),
  ...Envelope
})
export type Abort = typeof Abort.Type

/**
 * A wait the client makes before or between runs (a busy conversation, a broken stream), announced
 * before it starts; skippable like a reconnect wait (`skipReconnectWait`). Client-side: never stored.
 */
export const WaitReason = Schema.Literal("busy", "stream_reconnect")
export type WaitReason = typeof WaitReason.Type

export const Wait = Schema.Struct({
  type: Schema.tag("wait"),
  reason: WaitReason,
  retry_in_ms: Schema.NonNegativeInt,
  ...Envelope
})
export type Wait = typeof Wait.Type

export const TextDelta = Schema.Struct({
  type: Schema.tag("text_delta"),
  content: Schema.String,
  ...Envelope
})
export type TextDelta = typeof TextDelta.Type

export const ReasoningDelta = Schema.Struct({
  type: Schema.tag("reasoning_delta"),
  content: Schema.String,
  ...Envelope
})
export type ReasoningDelta = typeof ReasoningDelta.Type

/** A fragment of a tool call's arguments; the fragments concatenate to `tool_call.arguments`. */
export const ToolCallDelta = Schema.Struct({
  type: Schema.tag("tool_call_delta"),
  tool_call_id: ToolCallId,
  name: Schema.String,
  arguments: Schema.String,
  ...Envelope
})
export type ToolCallDelta = typeof ToolCallDelta.Type

export const Event = Schema.Union(
  RequestBegin,
  RequestEnd,
  TokenUsage,
  ApprovalDecision,
  TurnRetried,
  StopReason,
  CompactionBegin,
  CompactionEnd,
  Abort
)
export type Event = typeof Event.Type

export const Delta = Schema.Union(TextDelta, ReasoningDelta, ToolCallDelta)
export type Delta = typeof Delta.Type

/** Everything a task streams: the JSON objects `baton run --json` prints, one per line. */
export const TaskEvent = Schema.Union(
  UserMessage,
  AssistantMessage,
  ReasoningMessage,
  ToolCall,
  ToolReturn,
  SummaryMessage,
  RequestBegin,
  RequestEnd,
  TokenUsage,
  ApprovalDecision,
  TurnRetried,
  StopReason,
  CompactionBegin,
  CompactionEnd,
  Abort,
  ApprovalRequest,
  Wait,
  TextDelta,
  ReasoningDelta,
  ToolCallDelta
)
export type TaskEvent = typeof TaskEvent.Type
export type TaskEventType = TaskEvent["type"]

/** One numbered item of a run: persisted before it is published, resumable with `after = seq`. */
export type Chunk = TaskEvent & { readonly run_id: RunId; readonly seq: Seq }

export const isChunk = (event: TaskEvent): event is Chunk =>
  event.run_id !== undefined && event.seq !== undefined

/** Parses one line of `--json` output or one SSE `data:` payload. */
export const TaskEventFromJson = Schema.parseJson(TaskEvent)

const deltaTypes: ReadonlySet<TaskEventType> = new Set(["text_delta", "reasoning_delta", "tool_call_delta"])

/** Deltas are stream-only: never history, never trace. */
export const isDelta = (event: TaskEvent): event is Delta => deltaTypes.has(event.type)
