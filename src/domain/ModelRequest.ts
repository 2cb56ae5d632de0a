import type { ConversationSettings } from "./Conversation.js"
import type { Message } from "./Messages.js"
import type { ProviderRequest, ThinkingLevel } from "./ProviderEvent.js"

/** The settings a model request is made of. */
export type RequestSettings = Pick<ConversationSettings, "model" | "system_prompt" | "tools" | "max_output_tokens">

const assistantSide: ReadonlySet<Message["type"]> = new Set(["assistant_message", "reasoning_message", "tool_call"])

/**
 * Results in call order: results are committed as their tools finish, so a turn's returns are stored
 * in completion order; each contiguous block of them is put in the order of the calls of the turn just
 * before it. Anything else keeps its place (a sort that is stable; a return whose call is elsewhere
 * keeps its relative order after the others).
 */
export const inCallOrder = (history: ReadonlyArray<Message>): ReadonlyArray<Message> => {
  const out: Array<Message> = []
  let i = 0
  while (i < history.length) {
    if (history[i]!.type !== "tool_return") {
      out.push(history[i]!)
      i++
      continue
    }
    let j = i
    while (j < history.length && history[j]!.type === "tool_return") j++
    const order = new Map<string, number>()
    for (let k = out.length - 1; k >= 0 && assistantSide.has(out[k]!.type); k--) {
      const m = out[k]!
      if (m.type === "tool_call") order.set(m.tool_call_id, k)
    }
    const rank = (m: Message) => (m.type === "tool_return" ? order.get(m.tool_call_id) ?? Number.MAX_SAFE_INTEGER : Number.MAX_SAFE_INTEGER)
    out.push(...history.slice(i, j).map((m, n) => ({ m, n })).sort((a, b) => rank(a.m) - rank(b.m) || a.n - b.n).map(({ m }) => m))
    i = j
  }
  return out
}

/**
 * The one way Baton asks a model: the conversation's model (else the provider layer's), system
 * prompt, tools and output limit over `history`, with the run's thinking level if it has one.
 */
export const modelRequest = (settings: RequestSettings, history: ReadonlyArray<Message>, thinking?: ThinkingLevel): ProviderRequest => ({
  ...(settings.model !== undefined ? { model: settings.model } : {}),
  system: settings.system_prompt,
  history: inCallOrder(history),
  tools: settings.tools,
  ...(settings.max_output_tokens !== undefined ? { maxOutputTokens: settings.max_output_tokens } : {}),
  ...(thinking !== undefined ? { thinking } : {})
})

/** A request outside the conversation (a title): its model only, no system prompt, no tools. */
export const oneShotRequest = (settings: RequestSettings, prompt: Message, maxOutputTokens: number): ProviderRequest =>
  modelRequest({
    ...(settings.model !== undefined ? { model: settings.model } : {}),
    system_prompt: "",
    tools: [],
    max_output_tokens: maxOutputTokens
  }, [prompt])
