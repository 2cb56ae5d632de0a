import type { ProviderRequest, ThinkingLevel } from "../../domain/ProviderEvent.js"
import type { ImagePart } from "../../domain/Messages.js"
import { argumentsObject, type AssistantTurn, signedBy, toTurns, type Turn } from "./History.js"

/** Anthropic Messages: the request body built from the domain history. */

export const PROVIDER = "anthropic"
/** The `provider` of a `redacted_thinking` block: its opaque `data` travels as the signature. */
export const REDACTED_PROVIDER = "anthropic-redacted"

/**
 * `max_tokens` is mandatory here. 8192 is accepted by every current Claude model (Claude 3.5 Haiku's
 * ceiling) and long enough for a tool-using turn; callers wanting more pass maxOutputTokens.
 */
export const DEFAULT_MAX_TOKENS = 8192
const MIN_BUDGET = 1024
const BUDGET: Record<Exclude<ThinkingLevel, "off">, number> = { low: 2048, medium: 8192, high: 16384 }

type Block = Record<string, unknown>

const imageBlock = (image: ImagePart): Block => ({ type: "image", source: { type: "base64", media_type: image.media_type, data: image.data } })
interface WireMessage {
  role: "user" | "assistant"
  content: Array<Block>
}

const assistantBlocks = (turn: AssistantTurn): Array<Block> =>
  turn.parts.flatMap((part): Array<Block> => {
    switch (part._tag) {
      case "Reasoning":
        return part.message.provider === REDACTED_PROVIDER
          ? [{ type: "redacted_thinking", data: part.message.signature }]
          : [{ type: "thinking", thinking: part.message.content, signature: part.message.signature }]
      case "Text":
        return part.text === "" ? [] : [{ type: "text", text: part.text }]
      case "ToolCall":
        return [{
          type: "tool_use",
          id: part.call.tool_call_id,
          name: part.call.name,
          input: argumentsObject(part.call.arguments)
        }]
    }
  })

const toMessages = (turns: ReadonlyArray<Turn>): Array<WireMessage> => {
  const messages: Array<WireMessage> = []
  for (const turn of turns) {
    const message: WireMessage = turn._tag === "Assistant"
      ? { role: "assistant", content: assistantBlocks(turn) }
      : {
        role: "user",
        // tool_result blocks must open the user message that follows the tool_use turn
        content: [
          ...turn.returns.map((r) => ({
            type: "tool_result",
            tool_use_id: r.tool_call_id,
            ...(r.images !== undefined && r.images.length > 0
              ? { content: [...(r.content !== "" ? [{ type: "text", text: r.content }] : []), ...r.images.map(imageBlock)] }
              : r.content !== ""
              ? { content: r.content }
              : {}),
            ...(r.status !== "success" ? { is_error: true } : {})
          })),
          ...turn.texts.filter((t) => t !== "").map((text) => ({ type: "text", text })),
          ...turn.images.map(imageBlock)
        ]
      }
    if (message.content.length === 0) continue
    const last = messages.at(-1)
    // Roles must alternate; a turn emptied by dropped reasoning would otherwise leave two users in a row.
    if (last !== undefined && last.role === message.role) last.content.push(...message.content)
    else messages.push(message)
  }
  return messages
}

/**
 * With thinking on, Anthropic rejects a tool-use continuation whose last assistant turn does not open
 * with a signed thinking block (e.g. reasoning produced by another provider). Thinking is then left off
 * for that request rather than failing it.
 */
const continuationLacksThinking = (turns: ReadonlyArray<Turn>): boolean => {
  const lastAssistant = turns.filter((t): t is AssistantTurn => t._tag === "Assistant").at(-1)
  if (lastAssistant === undefined || !lastAssistant.parts.some((p) => p._tag === "ToolCall")) return false
  return lastAssistant.parts[0]?._tag !== "Reasoning"
}

const thinkingOf = (request: ProviderRequest, turns: ReadonlyArray<Turn>) => {
  if (request.thinking === undefined || request.thinking === "off") return undefined
  if (continuationLacksThinking(turns)) return undefined
  const wanted = BUDGET[request.thinking]
  const budget = request.maxOutputTokens === undefined ? wanted : Math.min(wanted, request.maxOutputTokens - MIN_BUDGET)
  return budget >= MIN_BUDGET ? budget : undefined
}

export const encodeAnthropicRequest = (request: ProviderRequest, defaults: { readonly model: string }) => {
  const turns = toTurns(request.history, signedBy(PROVIDER, REDACTED_PROVIDER))
  const budget = thinkingOf(request, turns)
  return {
    model: request.model ?? defaults.model,
    max_tokens: request.maxOutputTokens ?? (budget === undefined ? DEFAULT_MAX_TOKENS : budget + DEFAULT_MAX_TOKENS),
    ...(request.system !== "" ? { system: request.system } : {}),
    messages: toMessages(turns),
    ...(request.tools.length > 0
      ? { tools: request.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })) }
      : {}),
    ...(budget !== undefined ? { thinking: { type: "enabled", budget_tokens: budget } } : {}),
    stream: true
  }
}
