import type { ProviderRequest } from "../../domain/ProviderEvent.js"
import type { ImagePart } from "../../domain/Messages.js"
import { dataUrl, toolImagesText, toTurns } from "./History.js"

const imageUrl = (image: ImagePart) => ({ type: "image_url", image_url: { url: dataUrl(image) } })

/** OpenAI Chat Completions (and every server that copies it): the request body. */

export const PROVIDER = "openai-chat"

const OPENAI_HOST = /(^|\.)openai\.com$/

/**
 * `max_tokens` is what every OpenAI-compatible server understands (Ollama, vLLM, llama.cpp, LM Studio,
 * OpenRouter); OpenAI itself deprecated it and rejects it for reasoning models, so it gets
 * `max_completion_tokens`.
 */
const maxTokensField = (baseUrl: string): "max_tokens" | "max_completion_tokens" => {
  try {
    return OPENAI_HOST.test(new URL(baseUrl).hostname) ? "max_completion_tokens" : "max_tokens"
  } catch {
    return "max_tokens"
  }
}

export const encodeChatRequest = (request: ProviderRequest, defaults: { readonly model: string; readonly baseUrl: string }) => {
  const messages: Array<Record<string, unknown>> = []
  if (request.system !== "") messages.push({ role: "system", content: request.system })
  // Chat Completions has no field for replayed reasoning (DeepSeek even rejects it), so none is sent.
  for (const turn of toTurns(request.history, () => false)) {
    if (turn._tag === "User") {
      for (const r of turn.returns) messages.push({ role: "tool", tool_call_id: r.tool_call_id, content: r.content })
      // A tool message is text only: a tool's images follow its results as a user message.
      for (const r of turn.returns) {
        if (r.images !== undefined && r.images.length > 0) {
          messages.push({ role: "user", content: [{ type: "text", text: toolImagesText(r) }, ...r.images.map(imageUrl)] })
        }
      }
      turn.texts.forEach((text, i) =>
        messages.push({
          role: "user",
          content: i === turn.texts.length - 1 && turn.images.length > 0 ? [{ type: "text", text }, ...turn.images.map(imageUrl)] : text
        }))
      continue
    }
    const texts = turn.parts.flatMap((p) => (p._tag === "Text" && p.text !== "" ? [p.text] : []))
    const calls = turn.parts.flatMap((p) =>
      p._tag === "ToolCall"
        ? [{ id: p.call.tool_call_id, type: "function", function: { name: p.call.name, arguments: p.call.arguments } }]
        : []
    )
    if (texts.length === 0 && calls.length === 0) continue
    messages.push({
      role: "assistant",
      content: texts.length > 0 ? texts.join("\n\n") : null,
      ...(calls.length > 0 ? { tool_calls: calls } : {})
    })
  }
  return {
    model: request.model ?? defaults.model,
    messages,
    stream: true,
    stream_options: { include_usage: true },
    ...(request.tools.length > 0
      ? {
        tools: request.tools.map((t) => ({
          type: "function",
          function: { name: t.name, description: t.description, parameters: t.parameters }
        }))
      }
      : {}),
    ...(request.maxOutputTokens === undefined
      ? {}
      : maxTokensField(defaults.baseUrl) === "max_tokens"
      ? { max_tokens: request.maxOutputTokens }
      : { max_completion_tokens: request.maxOutputTokens }),
    ...(request.thinking !== undefined && request.thinking !== "off" ? { reasoning_effort: request.thinking } : {})
  }
}
