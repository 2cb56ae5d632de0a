import type { ProviderRequest } from "../../domain/ProviderEvent.js"
import { signedBy, toTurns } from "./History.js"

/** OpenAI Responses: the request body built from the domain history. */

export const PROVIDER = "openai-responses"

/**
 * Stateless use (`store: false`): the whole context is sent every time and reasoning travels as
 * encrypted content, so no item carries a server-side id (the server would look it up and fail).
 */
export const encodeResponsesRequest = (request: ProviderRequest, defaults: { readonly model: string }) => {
  const input: Array<Record<string, unknown>> = []
  for (const turn of toTurns(request.history, signedBy(PROVIDER))) {
    if (turn._tag === "User") {
      for (const r of turn.returns) input.push({ type: "function_call_output", call_id: r.tool_call_id, output: r.content })
      for (const text of turn.texts) input.push({ type: "message", role: "user", content: text })
      continue
    }
    for (const part of turn.parts) {
      switch (part._tag) {
        case "Reasoning":
          input.push({
            type: "reasoning",
            summary: part.message.content === "" ? [] : [{ type: "summary_text", text: part.message.content }],
            encrypted_content: part.message.signature
          })
          break
        case "Text":
          if (part.text !== "") input.push({ type: "message", role: "assistant", content: part.text })
          break
        case "ToolCall":
          input.push({
            type: "function_call",
            call_id: part.call.tool_call_id,
            name: part.call.name,
            arguments: part.call.arguments
          })
          break
      }
    }
  }
  const reasoning = request.thinking !== undefined && request.thinking !== "off"
  return {
    model: request.model ?? defaults.model,
    ...(request.system !== "" ? { instructions: request.system } : {}),
    input,
    ...(request.tools.length > 0
      ? {
        tools: request.tools.map((t) => ({
          type: "function",
          name: t.name,
          description: t.description,
          parameters: t.parameters,
          strict: false
        }))
      }
      : {}),
    ...(request.maxOutputTokens !== undefined ? { max_output_tokens: request.maxOutputTokens } : {}),
    // encrypted reasoning is only requested when reasoning is: non-reasoning models reject the include
    ...(reasoning
      ? { reasoning: { effort: request.thinking, summary: "auto" }, include: ["reasoning.encrypted_content"] }
      : {}),
    store: false,
    stream: true
  }
}
