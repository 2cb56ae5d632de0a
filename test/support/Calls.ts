import { ToolCallId } from "../../src/domain/Ids.js"
import type { ToolCall } from "../../src/domain/Messages.js"

export const toolCall = (id: string, name: string, args: unknown): ToolCall => ({
  type: "tool_call",
  tool_call_id: ToolCallId.make(id),
  name,
  arguments: typeof args === "string" ? args : JSON.stringify(args)
})
