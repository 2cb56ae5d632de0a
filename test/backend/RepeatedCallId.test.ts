import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { Backend } from "../../src/services/Backend.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { gatedProvider } from "../support/serverHarness.js"
import { collect, input, user } from "../support/testing.js"

/** A provider that sends one tool call id twice in one response (seen in the wild) must not leave two pending calls. */
describe("a tool_call_id repeated inside one model response", () => {
  it.scopedLive("leaves one pending call, streamed and recorded once", () =>
    Effect.gen(function*() {
      const model = yield* gatedProvider
      const backend = Context.get(yield* Layer.build(layerLocal().pipe(Layer.provide(layerMemory), Layer.provide(model.layer))), Backend)
      const conversation = yield* backend.createConversation({ system_prompt: "sys", tools: [{ name: "LS", description: "list", parameters: { type: "object" } }] })
      yield* model.emit(
        { _tag: "ToolCallStart", id: "call_1", name: "LS" },
        { _tag: "ToolCallEnd", id: "call_1", name: "LS", arguments: "{}" },
        { _tag: "ToolCallStart", id: "call_1", name: "LS" },
        { _tag: "ToolCallEnd", id: "call_1", name: "LS", arguments: "{}" },
        { _tag: "Finish", reason: "tool_calls" }
      )
      const chunks = yield* collect(backend.send(conversation.id, input(user("list it"))))
      assert.deepStrictEqual(chunks.flatMap((c) => (c.type === "tool_call" ? [String(c.tool_call_id)] : [])), ["call_1"])
      assert.deepStrictEqual(chunks.flatMap((c) => (c.type === "stop_reason" ? [c.reason] : [])), ["requires_approval"])
      const pending = yield* backend.pendingApprovals(conversation.id)
      assert.deepStrictEqual(pending.map((c) => c.tool_call_id), ["call_1"])
      const recorded = (yield* backend.history(conversation.id)).filter((s) => s.item.type === "tool_call")
      assert.strictEqual(recorded.length, 1)
    }))
})
