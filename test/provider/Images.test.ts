import { assert, describe, it } from "@effect/vitest"
import type { ImagePart, Message, ToolReturn, UserMessage } from "../../src/domain/Messages.js"
import { IMAGE_OMITTED_TEXT, withoutImages } from "../../src/domain/Messages.js"
import { encodeAnthropicRequest } from "../../src/services/provider/AnthropicRequest.js"
import { encodeChatRequest } from "../../src/services/provider/OpenAiChatRequest.js"
import { encodeResponsesRequest } from "../../src/services/provider/OpenAiResponsesRequest.js"
import { call, request, result, user } from "../support/ProviderHarness.js"

/** Images to the model in each wire format: a prompt's attachment, and an image a tool (Read) returned. */

const png: ImagePart = { media_type: "image/png", data: "iVBORw0KGgo=" }
const jpeg: ImagePart = { media_type: "image/jpeg", data: "/9j/4AAQ" }

const prompt: UserMessage = { ...user("what is in this screenshot?"), images: [png] }
const returned: ToolReturn = { ...result("R", "[image: chart.jpg, image/jpeg, 6 bytes]"), images: [jpeg] }
const history: ReadonlyArray<Message> = [prompt, call("R", "Read", "{\"file_path\":\"chart.jpg\"}"), returned]

describe("images in each wire format", () => {
  it("Chat Completions: image_url data URLs on the user message; a tool's images follow its tool message as a user message", () => {
    const body = encodeChatRequest(request({ history }), { model: "m", baseUrl: "http://127.0.0.1/v1" })
    assert.deepStrictEqual(body.messages.slice(1), [
      {
        role: "user",
        content: [
          { type: "text", text: "what is in this screenshot?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }
        ]
      },
      { role: "assistant", content: null, tool_calls: [{ id: "R", type: "function", function: { name: "Read", arguments: "{\"file_path\":\"chart.jpg\"}" } }] },
      { role: "tool", tool_call_id: "R", content: "[image: chart.jpg, image/jpeg, 6 bytes]" },
      {
        role: "user",
        content: [
          { type: "text", text: "The images the R call returned:" },
          { type: "image_url", image_url: { url: "data:image/jpeg;base64,/9j/4AAQ" } }
        ]
      }
    ])
  })

  it("Anthropic: image blocks (base64 source) in the user turn and inside the tool_result", () => {
    const body = encodeAnthropicRequest(request({ history }), { model: "m" })
    assert.deepStrictEqual(body.messages[0], {
      role: "user",
      content: [
        { type: "text", text: "what is in this screenshot?" },
        { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }
      ]
    })
    assert.deepStrictEqual(body.messages[2], {
      role: "user",
      content: [{
        type: "tool_result",
        tool_use_id: "R",
        content: [
          { type: "text", text: "[image: chart.jpg, image/jpeg, 6 bytes]" },
          { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "/9j/4AAQ" } }
        ]
      }]
    })
  })

  it("Responses: input_image data URLs in a user message; a tool's images follow its function_call_output", () => {
    const body = encodeResponsesRequest(request({ history }), { model: "m" })
    assert.deepStrictEqual(body.input, [
      {
        type: "message",
        role: "user",
        content: [
          { type: "input_text", text: "what is in this screenshot?" },
          { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=" }
        ]
      },
      { type: "function_call", call_id: "R", name: "Read", arguments: "{\"file_path\":\"chart.jpg\"}" },
      { type: "function_call_output", call_id: "R", output: "[image: chart.jpg, image/jpeg, 6 bytes]" },
      {
        type: "message",
        role: "user",
        content: [
          { type: "input_text", text: "The images the R call returned:" },
          { type: "input_image", image_url: "data:image/jpeg;base64,/9j/4AAQ" }
        ]
      }
    ])
  })

  it("withoutImages: each image becomes the placeholder text; nothing else changes", () => {
    const plain = withoutImages(history)
    assert.deepStrictEqual(plain[0], { type: "user_message", content: `what is in this screenshot?\n${IMAGE_OMITTED_TEXT}`, otid: prompt.otid })
    assert.strictEqual(plain[1], history[1])
    assert.isUndefined((plain[2] as ToolReturn).images)
    const body = JSON.stringify(encodeChatRequest(request({ history: plain }), { model: "m", baseUrl: "http://127.0.0.1/v1" }))
    assert.notInclude(body, "base64")
  })
})
