import { assert, describe, it } from "@effect/vitest"
import { Otid } from "../../src/domain/Ids.js"
import type { Message } from "../../src/domain/Messages.js"
import { modelRequest, oneShotRequest } from "../../src/domain/ModelRequest.js"

const tools = [{ name: "Read", description: "read a file", parameters: { type: "object" } }]
const history: ReadonlyArray<Message> = [{ type: "user_message", content: "hi", otid: Otid.make("o1") }]

describe("modelRequest", () => {
  it("the conversation's model, system prompt, tools and output limit over the history, with the thinking level", () => {
    assert.deepStrictEqual(
      modelRequest({ model: "m", system_prompt: "sys", tools, max_output_tokens: 512 }, history, "high"),
      { model: "m", system: "sys", history, tools, maxOutputTokens: 512, thinking: "high" }
    )
  })

  it("leaves out what is not set, so the provider layer's defaults apply", () => {
    assert.deepStrictEqual(modelRequest({ system_prompt: "", tools: [] }, history), { system: "", history, tools: [] })
  })

  it("a one-shot request keeps only the model: no system prompt, no tools", () => {
    assert.deepStrictEqual(
      oneShotRequest({ model: "m", system_prompt: "sys", tools, max_output_tokens: 4096 }, history[0]!, 64),
      { model: "m", system: "", history, tools: [], maxOutputTokens: 64 }
    )
    assert.deepStrictEqual(oneShotRequest({ system_prompt: "sys", tools }, history[0]!, 64), { system: "", history, tools: [], maxOutputTokens: 64 })
  })
})
