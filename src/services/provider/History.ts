import type { AssistantMessage, ImagePart, Message, ReasoningMessage, ToolCall, ToolReturn } from "../../domain/Messages.js"

/**
 * The provider-neutral shape of a model context, before any wire format: alternating assistant turns
 * and user turns. Every wire encoder starts from here, so the pairing rules live in one place.
 *
 * - Consecutive assistant text, reasoning and tool calls form one assistant turn.
 * - The items between two assistant turns form one user turn: first the tool returns, ordered like the
 *   calls of the preceding assistant turn (returns for unknown ids keep their place after those), then
 *   the user texts in order (summary_message items become user text).
 * - Reasoning is kept only when `keepReasoning` accepts it (its producer, with a signature).
 */

export type AssistantPart =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Reasoning"; readonly message: ReasoningMessage }
  | { readonly _tag: "ToolCall"; readonly call: ToolCall }

export interface AssistantTurn {
  readonly _tag: "Assistant"
  readonly parts: ReadonlyArray<AssistantPart>
}

export interface UserTurn {
  readonly _tag: "User"
  readonly returns: ReadonlyArray<ToolReturn>
  readonly texts: ReadonlyArray<string>
  /** The user messages' attached images, in order (tool returns carry their own). */
  readonly images: ReadonlyArray<ImagePart>
}

/** An image as a data URL (Chat Completions' image_url, Responses' input_image). */
export const dataUrl = (image: ImagePart): string => `data:${image.media_type};base64,${image.data}`

/** Introduces a tool's images where the wire format cannot put them in the tool result itself. */
export const toolImagesText = (r: ToolReturn): string => `The images the ${r.tool_call_id} call returned:`

export type Turn = AssistantTurn | UserTurn

const isAssistantSide = (m: Message): m is AssistantMessage | ReasoningMessage | ToolCall =>
  m.type === "assistant_message" || m.type === "reasoning_message" || m.type === "tool_call"

const toPart = (m: AssistantMessage | ReasoningMessage | ToolCall): AssistantPart => {
  switch (m.type) {
    case "assistant_message":
      return { _tag: "Text", text: m.content }
    case "reasoning_message":
      return { _tag: "Reasoning", message: m }
    case "tool_call":
      return { _tag: "ToolCall", call: m }
  }
}

const orderReturns = (returns: ReadonlyArray<ToolReturn>, previous: AssistantTurn | undefined) => {
  const order = new Map<string, number>()
  previous?.parts.forEach((part) => {
    if (part._tag === "ToolCall") order.set(part.call.tool_call_id, order.size)
  })
  const rank = (r: ToolReturn) => order.get(r.tool_call_id) ?? Number.MAX_SAFE_INTEGER
  return returns
    .map((r, i) => ({ r, i }))
    .sort((a, b) => rank(a.r) - rank(b.r) || a.i - b.i)
    .map(({ r }) => r)
}

export const toTurns = (
  history: ReadonlyArray<Message>,
  keepReasoning: (message: ReasoningMessage) => boolean
): ReadonlyArray<Turn> => {
  const turns: Array<Turn> = []
  let i = 0
  while (i < history.length) {
    const first = history[i]!
    if (isAssistantSide(first)) {
      const parts: Array<AssistantPart> = []
      while (i < history.length && isAssistantSide(history[i]!)) {
        const m = history[i++] as AssistantMessage | ReasoningMessage | ToolCall
        if (m.type !== "reasoning_message" || keepReasoning(m)) parts.push(toPart(m))
      }
      if (parts.length > 0) turns.push({ _tag: "Assistant", parts })
      continue
    }
    const returns: Array<ToolReturn> = []
    const texts: Array<string> = []
    const images: Array<ImagePart> = []
    while (i < history.length && !isAssistantSide(history[i]!)) {
      const m = history[i++]!
      if (m.type === "tool_return") returns.push(m)
      else if (m.type === "user_message" || m.type === "summary_message") texts.push(m.content)
      if (m.type === "user_message" && m.images !== undefined) images.push(...m.images)
    }
    const previous = turns.at(-1)
    turns.push({
      _tag: "User",
      returns: orderReturns(returns, previous?._tag === "Assistant" ? previous : undefined),
      texts,
      images
    })
  }
  return turns
}

/** Reasoning is replayed only to the provider that produced it, and only with its signature. */
export const signedBy = (...providers: ReadonlyArray<string>) => (message: ReasoningMessage): boolean =>
  message.signature !== undefined && message.signature !== "" && message.provider !== undefined &&
  providers.includes(message.provider)

/** A tool call's arguments as a JSON object for wire formats that need one (Anthropic `input`). */
export const argumentsObject = (raw: string): Record<string, unknown> => {
  try {
    const value: unknown = JSON.parse(raw)
    if (typeof value === "object" && value !== null && !Array.isArray(value)) return value as Record<string, unknown>
  } catch {
    // fall through: keep what the model sent so it can see its own mistake
  }
  return { raw_arguments: raw }
}
