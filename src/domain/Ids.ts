import { Schema } from "effect"

/** A persistent conversation (history + settings). */
export const ConversationId = Schema.NonEmptyTrimmedString.pipe(Schema.brand("ConversationId"))
export type ConversationId = typeof ConversationId.Type

/** One backend execution for one input delta. */
export const RunId = Schema.NonEmptyTrimmedString.pipe(Schema.brand("RunId"))
export type RunId = typeof RunId.Type

/** A stored message, assigned by the Store. */
export const MessageId = Schema.NonEmptyTrimmedString.pipe(Schema.brand("MessageId"))
export type MessageId = typeof MessageId.Type

/** The id a model gave one tool call; pairs a tool_call with its tool_return. */
export const ToolCallId = Schema.NonEmptyString.pipe(Schema.brand("ToolCallId"))
export type ToolCallId = typeof ToolCallId.Type

/** Client-chosen id of an input message: sending one otid twice never starts a second run. */
export const Otid = Schema.NonEmptyTrimmedString.pipe(Schema.brand("Otid"))
export type Otid = typeof Otid.Type

/** Per-run chunk sequence number: 1, 2, 3… */
export const Seq = Schema.Int.pipe(Schema.positive())
export type Seq = typeof Seq.Type
