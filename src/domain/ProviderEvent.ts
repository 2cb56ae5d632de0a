import { Schema } from "effect"
import { ToolDefinition } from "./Conversation.js"
import { Message } from "./Messages.js"

/**
 * What a Provider streams: provider-neutral, before the backend numbers anything.
 * Serializable, so cassettes can record and replay it.
 */
export const TextDelta = Schema.TaggedStruct("TextDelta", { text: Schema.String })
export const ReasoningDelta = Schema.TaggedStruct("ReasoningDelta", { text: Schema.String })
/** Closes the current reasoning block with the provider's opaque proof (Anthropic signature, OpenAI encrypted content). */
export const ReasoningSignature = Schema.TaggedStruct("ReasoningSignature", {
  signature: Schema.String,
  provider: Schema.String
})
export const ToolCallStart = Schema.TaggedStruct("ToolCallStart", { id: Schema.String, name: Schema.String })
export const ToolCallDelta = Schema.TaggedStruct("ToolCallDelta", { id: Schema.String, argumentsDelta: Schema.String })
/** `arguments` is the raw JSON string, never parsed or repaired here. */
export const ToolCallEnd = Schema.TaggedStruct("ToolCallEnd", {
  id: Schema.String,
  name: Schema.String,
  arguments: Schema.String
})
export const Usage = Schema.TaggedStruct("Usage", {
  inputTokens: Schema.NonNegativeInt,
  outputTokens: Schema.NonNegativeInt,
  cachedInputTokens: Schema.NonNegativeInt,
  totalTokens: Schema.NonNegativeInt,
  /** Prompt tokens written to the provider's cache (Anthropic's cache_creation_input_tokens), within inputTokens. */
  cacheWriteTokens: Schema.optionalWith(Schema.NonNegativeInt, { exact: true })
})
export const FinishReason = Schema.Literal("stop", "tool_calls", "length", "other")
export type FinishReason = typeof FinishReason.Type
export const Finish = Schema.TaggedStruct("Finish", {
  reason: FinishReason,
  /** The model that answered, as the provider names it (often a dated snapshot of the one asked for). */
  model: Schema.optionalWith(Schema.String, { exact: true })
})

export const ProviderEvent = Schema.Union(
  TextDelta,
  ReasoningDelta,
  ReasoningSignature,
  ToolCallStart,
  ToolCallDelta,
  ToolCallEnd,
  Usage,
  Finish
)
export type ProviderEvent = typeof ProviderEvent.Type

export const ThinkingLevel = Schema.Literal("off", "low", "medium", "high")
export type ThinkingLevel = typeof ThinkingLevel.Type

/**
 * One model request. `history` is the whole model context in order (the domain messages);
 * a Provider layer translates it to its wire format and pairs tool calls with their returns.
 */
export const ProviderRequest = Schema.Struct({
  /** Falls back to the layer's configured model. */
  model: Schema.optionalWith(Schema.String, { exact: true }),
  system: Schema.String,
  history: Schema.Array(Message),
  tools: Schema.Array(ToolDefinition),
  maxOutputTokens: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }),
  thinking: Schema.optionalWith(ThinkingLevel, { exact: true })
})
export type ProviderRequest = typeof ProviderRequest.Type
