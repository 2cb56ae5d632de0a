import { assert, describe, it } from "@effect/vitest"
import { Otid } from "../../src/domain/Ids.js"
import type { Message } from "../../src/domain/Messages.js"
import { inCallOrder, modelRequest, oneShotRequest } from "../../src/domain/ModelRequest.js"
import { ToolCallId } from "../../src/domain/Ids.js"

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

  it("results stored in completion order reach the model in call order, each block after its own turn's calls", () => {
    const call = (id: string): Message => ({ type: "tool_call", tool_call_id: ToolCallId.make(id), name: "Read", arguments: "{}" })
    const ret = (id: string): Message => ({ type: "tool_return", tool_call_id: ToolCallId.make(id), status: "success", content: id, otid: Otid.make(`o-${id}`) })
    const said = (content: string): Message => ({ type: "assistant_message", content })
    const order = (h: ReadonlyArray<Message>) => h.map((m) => (m.type === "tool_call" ? `call ${m.tool_call_id}` : m.type === "tool_return" ? `ret ${m.tool_call_id}` : m.type))
    // Ollama numbers calls per turn: call_0 comes back in the second turn and must not be confused with the first.
    const stored = [history[0]!, said("x"), call("call_0"), call("call_1"), ret("call_1"), ret("call_0"), call("call_0"), call("a"), ret("a"), ret("call_0"), said("done")]
    assert.deepStrictEqual(order(inCallOrder(stored)), [
      "user_message", "assistant_message", "call call_0", "call call_1", "ret call_0", "ret call_1",
      "call call_0", "call a", "ret call_0", "ret a", "assistant_message"
    ])
    assert.deepStrictEqual(order(modelRequest({ system_prompt: "", tools: [] }, stored).history), order(inCallOrder(stored)))
  })
})
