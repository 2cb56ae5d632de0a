import { Either } from "effect"
import { ApprovalPending, InvalidInput, InvalidToolCallIds } from "./Errors.js"
import type { ConversationId, ToolCallId } from "./Ids.js"
import type { InputMessage, ToolCall, ToolReturn } from "./Messages.js"

export type InputError = InvalidInput | ApprovalPending | InvalidToolCallIds

/**
 * Checks a run's input against the calls waiting for results and orders it for the model:
 * every pending call answered exactly once (results in call order), then the user texts.
 */
export const validateInput = (
  conversationId: ConversationId,
  messages: ReadonlyArray<InputMessage>,
  pending: ReadonlyArray<ToolCall>
): Either.Either<ReadonlyArray<InputMessage>, InputError> => {
  if (messages.length === 0) {
    return Either.left(new InvalidInput({ message: "a run needs at least one input message" }))
  }
  const otids = new Set(messages.map((m) => m.otid))
  if (otids.size !== messages.length) {
    return Either.left(new InvalidInput({ message: "every input message needs its own otid" }))
  }
  const returns = messages.filter((m): m is ToolReturn => m.type === "tool_return")
  const texts = messages.filter((m) => m.type === "user_message")
  const pendingIds = pending.map((c) => c.tool_call_id)
  if (pendingIds.length > 0 && returns.length === 0) {
    return Either.left(
      new ApprovalPending({
        conversationId,
        toolCallIds: pendingIds,
        message: `the conversation is waiting for the results of ${pendingIds.length} tool call(s): ${pendingIds.join(", ")}`
      })
    )
  }
  const seen = new Set<ToolCallId>()
  const unknown: Array<ToolCallId> = []
  for (const r of returns) {
    if (!pendingIds.includes(r.tool_call_id) || seen.has(r.tool_call_id)) unknown.push(r.tool_call_id)
    seen.add(r.tool_call_id)
  }
  const missing = pendingIds.filter((id) => !seen.has(id))
  if (unknown.length > 0 || missing.length > 0) {
    return Either.left(
      new InvalidToolCallIds({
        conversationId,
        unknown,
        missing,
        message: [
          unknown.length > 0 ? `results for calls that are not pending: ${unknown.join(", ")}` : "",
          missing.length > 0 ? `no result for pending calls: ${missing.join(", ")}` : ""
        ].filter((s) => s.length > 0).join("; ")
      })
    )
  }
  const ordered = pendingIds.map((id) => returns.find((r) => r.tool_call_id === id)!)
  return Either.right([...ordered, ...texts])
}
