import { Schema } from "effect"
import { FilesSeen } from "./FilesSeen.js"
import { ConversationId, Otid, RunId, Seq, ToolCallId } from "./Ids.js"

/** Which subagent an event of a parent's task stream comes from: its conversation and the `Task` call. */
export const Origin = Schema.Struct({ conversation_id: ConversationId, tool_call_id: ToolCallId, description: Schema.String })
export type Origin = typeof Origin.Type

/**
 * Fields every item of a run's stream carries once the backend has numbered it.
 * Client-side items (approval decisions, tool results before they are sent) have neither.
 */
export const Envelope = {
  run_id: Schema.optionalWith(RunId, { exact: true }),
  seq: Schema.optionalWith(Seq, { exact: true }),
  /** Set on a subagent's events as they reach its parent's task stream; the parent's own have none. */
  origin: Schema.optionalWith(Origin, { exact: true })
}

/** Image types every wire format takes (Chat Completions, Anthropic, Responses). */
export const ImageMediaType = Schema.Literal("image/png", "image/jpeg", "image/gif", "image/webp")
export type ImageMediaType = typeof ImageMediaType.Type

/** An image for the model, inline: a prompt's attachment, or what a tool returned (Read of a PNG, an MCP image). */
export const ImagePart = Schema.Struct({
  media_type: ImageMediaType,
  /** The bytes, base64. */
  data: Schema.String
})
export type ImagePart = typeof ImagePart.Type

const images = Schema.optionalWith(Schema.Array(ImagePart), { exact: true })

/** A user's text, also steering (`[user_steering]`) and context-only carry-over/summary text. */
export const UserMessage = Schema.Struct({
  type: Schema.tag("user_message"),
  content: Schema.String,
  otid: Otid,
  images,
  ...Envelope
})
export type UserMessage = typeof UserMessage.Type

export const AssistantMessage = Schema.Struct({
  type: Schema.tag("assistant_message"),
  content: Schema.String,
  ...Envelope
})
export type AssistantMessage = typeof AssistantMessage.Type

/**
 * Model reasoning. `signature` is the provider's opaque proof (Anthropic thinking signature,
 * OpenAI encrypted reasoning); `provider` names who produced it so a layer replays only its own.
 */
export const ReasoningMessage = Schema.Struct({
  type: Schema.tag("reasoning_message"),
  content: Schema.String,
  signature: Schema.optionalWith(Schema.String, { exact: true }),
  provider: Schema.optionalWith(Schema.String, { exact: true }),
  ...Envelope
})
export type ReasoningMessage = typeof ReasoningMessage.Type

/** A complete tool call; `arguments` is the raw JSON string exactly as the model sent it. */
export const ToolCall = Schema.Struct({
  type: Schema.tag("tool_call"),
  tool_call_id: ToolCallId,
  name: Schema.String,
  arguments: Schema.String,
  ...Envelope
})
export type ToolCall = typeof ToolCall.Type

export const ToolReturnStatus = Schema.Literal("success", "error", "denied", "interrupted")
export type ToolReturnStatus = typeof ToolReturnStatus.Type

/** The one result of a tool call: executed, failed, denied or interrupted. */
export const ToolReturn = Schema.Struct({
  type: Schema.tag("tool_return"),
  tool_call_id: ToolCallId,
  status: ToolReturnStatus,
  content: Schema.String,
  otid: Otid,
  exit_code: Schema.optionalWith(Schema.Int, { exact: true }),
  duration_ms: Schema.optionalWith(Schema.NonNegative, { exact: true }),
  images,
  /** What the tool showed the model of each file (never sent to the model): see FilesSeen. */
  files: Schema.optionalWith(FilesSeen, { exact: true }),
  ...Envelope
})
export type ToolReturn = typeof ToolReturn.Type

/** The summary a compaction produced, as shown to the user. */
export const SummaryMessage = Schema.Struct({
  type: Schema.tag("summary_message"),
  content: Schema.String,
  ...Envelope
})
export type SummaryMessage = typeof SummaryMessage.Type

/** What is kept in history. */
export const Message = Schema.Union(
  UserMessage,
  AssistantMessage,
  ReasoningMessage,
  ToolCall,
  ToolReturn,
  SummaryMessage
)
export type Message = typeof Message.Type

/** What a client may send to start a run: new user text, or results for pending tool calls. */
export const InputMessage = Schema.Union(UserMessage, ToolReturn)
export type InputMessage = typeof InputMessage.Type

export const DENIED_TEXT = "Tool call denied by user."
export const INTERRUPTED_TEXT = "[interrupted: tool aborted by user]"

export const IMAGE_OMITTED_TEXT = "[image omitted: the request was too large for the model]"

/**
 * The history with every image replaced by a short text placeholder: what a request refused as too
 * large is sent again as (the recovery policy's RetryWithoutImages). Messages without images are
 * returned as they are.
 */
export const withoutImages = (history: ReadonlyArray<Message>): ReadonlyArray<Message> =>
  history.map((m) => {
    if ((m.type !== "user_message" && m.type !== "tool_return") || m.images === undefined || m.images.length === 0) return m
    const { images, ...rest } = m
    const note = images.map(() => IMAGE_OMITTED_TEXT).join("\n")
    return { ...rest, content: rest.content === "" ? note : `${rest.content}\n${note}` }
  })
