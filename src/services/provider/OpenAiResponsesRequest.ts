import type { ProviderRequest } from "../../domain/ProviderEvent.js"
import type { ImagePart } from "../../domain/Messages.js"
import { dataUrl, signedBy, toolImagesText, toTurns } from "./History.js"

const inputImage = (image: ImagePart) => ({ type: "input_image", image_url: dataUrl(image) })

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
      // function_call_output is text: a tool's images follow its results as a user message.
      for (const r of turn.returns) {
        if (r.images !== undefined && r.images.length > 0) {
          input.push({ type: "message", role: "user", content: [{ type: "input_text", text: toolImagesText(r) }, ...r.images.map(inputImage)] })
        }
      }
      turn.texts.forEach((text, i) =>
        input.push({
          type: "message",
          role: "user",
          content: i === turn.texts.length - 1 && turn.images.length > 0 ? [{ type: "input_text", text }, ...turn.images.map(inputImage)] : text
        }))
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
