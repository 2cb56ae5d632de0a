import type { ConversationSettings } from "./Conversation.js"
import type { Message } from "./Messages.js"
import type { ProviderRequest, ThinkingLevel } from "./ProviderEvent.js"

/** The settings a model request is made of. */
export type RequestSettings = Pick<ConversationSettings, "model" | "system_prompt" | "tools" | "max_output_tokens">

/**
 * The one way Baton asks a model: the conversation's model (else the provider layer's), system
 * prompt, tools and output limit over `history`, with the run's thinking level if it has one.
 */
export const modelRequest = (settings: RequestSettings, history: ReadonlyArray<Message>, thinking?: ThinkingLevel): ProviderRequest => ({
  ...(settings.model !== undefined ? { model: settings.model } : {}),
  system: settings.system_prompt,
  history,
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
