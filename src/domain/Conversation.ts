import { Schema } from "effect"
import { ConversationId, ToolCallId } from "./Ids.js"
import { CompactionSettings } from "./Settings.js"

/** A tool as the model sees it; `parameters` is a JSON Schema object made from an effect Schema. */
export const ToolDefinition = Schema.Struct({
  name: Schema.NonEmptyString,
  description: Schema.String,
  parameters: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
export type ToolDefinition = typeof ToolDefinition.Type

export const ConversationSettings = Schema.Struct({
  /** Overrides the provider layer's model for this conversation. */
  model: Schema.optionalWith(Schema.NonEmptyString, { exact: true }),
  system_prompt: Schema.optionalWith(Schema.String, { default: () => "" }),
  tools: Schema.optionalWith(Schema.Array(ToolDefinition), { default: () => [] }),
  compaction: Schema.optionalWith(CompactionSettings, { default: () => Schema.decodeSync(CompactionSettings)({}) }),
  max_output_tokens: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }),
  /** The workspace a client ran this conversation in; lets `--continue` find it. */
  workspace: Schema.optionalWith(Schema.String, { exact: true })
})
export type ConversationSettings = typeof ConversationSettings.Type
export type ConversationSettingsInput = typeof ConversationSettings.Encoded

/** A subagent's conversation names the conversation and the `Task` call that started it. */
export const ParentLink = Schema.Struct({ conversation_id: ConversationId, tool_call_id: ToolCallId })
export type ParentLink = typeof ParentLink.Type

/** A fork names its source and the position its copied context ends at. */
export const ForkLink = Schema.Struct({ conversation_id: ConversationId, at: Schema.NonNegativeInt })
export type ForkLink = typeof ForkLink.Type

export const Conversation = Schema.Struct({
  id: ConversationId,
  title: Schema.optionalWith(Schema.String, { exact: true }),
  created_at: Schema.Int,
  updated_at: Schema.Int,
  settings: ConversationSettings,
  parent: Schema.optionalWith(ParentLink, { exact: true }),
  forked_from: Schema.optionalWith(ForkLink, { exact: true })
})
export type Conversation = typeof Conversation.Type
