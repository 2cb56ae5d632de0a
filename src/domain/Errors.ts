import { Schema } from "effect"
import { ConversationId, RunId, ToolCallId } from "./Ids.js"

/** The conversation already has an active run or compaction (HTTP 409 `conversation_busy`). */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", {
  conversationId: ConversationId,
  activity: Schema.Literal("run", "compaction"),
  runId: Schema.optionalWith(RunId, { exact: true }),
  message: Schema.String
}) {}

/** The conversation's one job is taken, by a run or a compaction (here or in another process). */
export const busyWith = (
  conversationId: ConversationId,
  runId: RunId,
  activity: "run" | "compaction",
  message = `conversation ${conversationId} is busy with ${activity === "compaction" ? "a compaction" : "run"} ${runId}`
): Conflict => new Conflict({ conversationId, activity, runId, message })

/** A user message arrived while tool calls wait for results (HTTP 409 `approval_pending`). */
export class ApprovalPending extends Schema.TaggedError<ApprovalPending>()("ApprovalPending", {
  conversationId: ConversationId,
  toolCallIds: Schema.Array(ToolCallId),
  message: Schema.String
}) {}

/** Tool results that do not answer exactly the pending calls (HTTP 400 `invalid_tool_call_ids`). */
export class InvalidToolCallIds extends Schema.TaggedError<InvalidToolCallIds>()("InvalidToolCallIds", {
  conversationId: ConversationId,
  unknown: Schema.Array(ToolCallId),
  missing: Schema.Array(ToolCallId),
  message: Schema.String
}) {}

/**
 * A result for a tool call that already has a different committed result (HTTP 409
 * `tool_call_answered`): a call is answered exactly once. The same result again is not an error.
 */
export class ToolCallAnswered extends Schema.TaggedError<ToolCallAnswered>()("ToolCallAnswered", {
  conversationId: ConversationId,
  toolCallId: ToolCallId,
  message: Schema.String
}) {}

/**
 * Steering for a conversation with no task running (HTTP 409 `no_task`): it would wait for a task
 * nobody started. The text belongs in a prompt, which starts one.
 */
export class NoTaskRunning extends Schema.TaggedError<NoTaskRunning>()("NoTaskRunning", {
  conversationId: ConversationId,
  message: Schema.String
}) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  entity: Schema.Literal("conversation", "run", "message", "segment"),
  id: Schema.String,
  message: Schema.String
}) {}

/** A request the backend cannot accept as given (empty input, mixed input kinds…). */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  message: Schema.String
}) {}

/** The model returned neither text nor a tool call. */
export class EmptyResponse extends Schema.TaggedError<EmptyResponse>()("EmptyResponse", {
  message: Schema.String
}) {}

/** A run's chunk stream ended without its stop_reason (a dropped connection to a remote backend). */
export class StreamBroken extends Schema.TaggedError<StreamBroken>()("StreamBroken", {
  runId: Schema.optionalWith(RunId, { exact: true }),
  message: Schema.String
}) {}

/** The runner that owned the run's conversation stopped mid-request; its new owner reconnects (a cluster takeover). */
export class RunnerLost extends Schema.TaggedError<RunnerLost>()("RunnerLost", {
  message: Schema.String
}) {}

/** A compaction's answer was no summary: it called tools, or said nothing. Re-asked at once (the model's mistake, not the network's). */
export class InvalidSummary extends Schema.TaggedError<InvalidSummary>()("InvalidSummary", {
  toolCalls: Schema.NonNegativeInt,
  message: Schema.String
}) {}

/** A storage transaction lost a race with another process (a stale snapshot) and can be run again whole. */
export class StoreBusy extends Schema.TaggedError<StoreBusy>()("StoreBusy", {
  message: Schema.String
}) {}

/** A one-shot model call (a title) failed; `tag` is the provider error's. */
export class ModelCallFailed extends Schema.TaggedError<ModelCallFailed>()("ModelCallFailed", {
  tag: Schema.String,
  message: Schema.String
}) {}

/** Bearer token missing or wrong (HTTP 401 `unauthorized`). */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  message: Schema.String
}) {}

export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  reason: Schema.Literal("corrupt", "newer_schema", "read_only", "io", "closed"),
  path: Schema.optionalWith(Schema.String, { exact: true }),
  message: Schema.String
}) {}

/** A chunk whose seq is not exactly the next one of its run. */
export class ChunkSeqError extends Schema.TaggedError<ChunkSeqError>()("ChunkSeqError", {
  runId: RunId,
  expected: Schema.Int,
  got: Schema.Int,
  message: Schema.String
}) {}

/** A tool path that resolves outside the workspace and every directory the rules grant. */
export class PathOutsideWorkspace extends Schema.TaggedError<PathOutsideWorkspace>()("PathOutsideWorkspace", {
  path: Schema.String,
  workspace: Schema.String,
  message: Schema.String
}) {}

/** A tool failed in a way the model should hear about (it becomes an `error` tool_return). */
export class ToolError extends Schema.TaggedError<ToolError>()("ToolError", {
  tool: Schema.String,
  message: Schema.String
}) {}

/**
 * An MCP tool call that got no answer from its server: the server is not running, died during the
 * call, or broke the protocol. (A tool that answers with `isError` is a result, not this.)
 */
export class McpCallError extends Schema.TaggedError<McpCallError>()("McpCallError", {
  server: Schema.String,
  tool: Schema.String,
  message: Schema.String
}) {}

/** A settings file or option that does not decode; `field` is the JSON path. */
export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  source: Schema.String,
  field: Schema.optionalWith(Schema.String, { exact: true }),
  message: Schema.String
}) {}

export const BackendError = Schema.Union(
  Conflict,
  ApprovalPending,
  InvalidToolCallIds,
  ToolCallAnswered,
  NoTaskRunning,
  NotFound,
  InvalidInput,
  StoreError,
  Unauthorized,
  StreamBroken,
  ModelCallFailed
)
export type BackendError = typeof BackendError.Type
