import { Schema } from "effect"
import type { Otid } from "./Ids.js"
import { ToolCallId } from "./Ids.js"
import { FilesSeen } from "./FilesSeen.js"
import { ImagePart, INTERRUPTED_TEXT, type ToolReturn } from "./Messages.js"

/** The outcome of executing one tool call on the workspace. */
export const ToolResult = Schema.Struct({
  tool_call_id: ToolCallId,
  status: Schema.Literal("success", "error", "interrupted"),
  /** What the model sees (already truncated to the output limit). */
  output: Schema.String,
  exit_code: Schema.optionalWith(Schema.Int, { exact: true }),
  stdout: Schema.optionalWith(Schema.String, { exact: true }),
  stderr: Schema.optionalWith(Schema.String, { exact: true }),
  duration_ms: Schema.NonNegative,
  images: Schema.optionalWith(Schema.Array(ImagePart), { exact: true }),
  /** What the call showed the model of each file, for the conversation's view of them. */
  files: Schema.optionalWith(FilesSeen, { exact: true })
})
export type ToolResult = typeof ToolResult.Type

export const interruptedResult = (toolCallId: ToolCallId, durationMs = 0): ToolResult => ({
  tool_call_id: toolCallId,
  status: "interrupted",
  output: INTERRUPTED_TEXT,
  duration_ms: durationMs
})

export const toToolReturn = (result: ToolResult, otid: Otid): ToolReturn => ({
  type: "tool_return",
  tool_call_id: result.tool_call_id,
  status: result.status,
  content: result.output,
  otid,
  ...(result.exit_code !== undefined ? { exit_code: result.exit_code } : {}),
  duration_ms: result.duration_ms,
  ...(result.images !== undefined && result.images.length > 0 ? { images: result.images } : {}),
  ...(result.files !== undefined ? { files: result.files } : {})
})
