import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import type { Wire } from "../support/MockWire.js"
import { collapse, liveProvider, request, run, settings, violations } from "../support/ProviderHarness.js"

const tools = [{ name: "Read", description: "Read a file", parameters: { type: "object" } }]

const against = (wire: Wire, reply: Reply) =>
  Effect.gen(function*() {
    const server = yield* MockModelServer.make({ replies: [reply] })
    const provider = yield* liveProvider(wire, settings(server.baseUrl(wire)))
    const outcome = yield* run(provider.stream(request({ tools })))
    assert.deepStrictEqual(violations(outcome), [])
    return outcome
  })

for (const wire of ["openai-chat", "anthropic", "openai-responses"] as const) {
  describe(`${wire} tool calls`, () => {
    it.scopedLive("a tool name that is not in the tool list still arrives as events", () =>
      Effect.gen(function*() {
        const { events, error } = yield* against(wire, Reply.toolCalls([{ id: "c1", name: "Teleport", args: { to: "mars" } }]))
        assert.isUndefined(error)
        assert.deepStrictEqual(collapse(events).slice(0, 3), [
          { _tag: "ToolCallStart", id: "c1", name: "Teleport" },
          { _tag: "ToolCallDelta", id: "c1", argumentsDelta: "{\"to\":\"mars\"}" },
          { _tag: "ToolCallEnd", id: "c1", name: "Teleport", arguments: "{\"to\":\"mars\"}" }
        ])
        assert.deepStrictEqual(events.at(-1), { _tag: "Finish", reason: "tool_calls", model: "test-model" })
      }))

    it.scopedLive("invalid JSON arguments arrive raw, unrepaired", () =>
      Effect.gen(function*() {
        const raw = "{\"path\": \"a.txt\", oops"
        const { events, error } = yield* against(wire, Reply.toolCalls([{ id: "c1", name: "Read", args: raw }]))
        assert.isUndefined(error)
        assert.deepStrictEqual(events.find((e) => e._tag === "ToolCallEnd"), {
          _tag: "ToolCallEnd",
          id: "c1",
          name: "Read",
          arguments: raw
        })
      }))

    it.scopedLive("text, then two calls, then usage, then exactly one Finish, last", () =>
      Effect.gen(function*() {
        const { events, error } = yield* against(
          wire,
          Reply.toolCalls([{ id: "c1", name: "Read", args: { path: "a" } }, { id: "c2", name: "Read", args: { path: "b" } }], {
            text: "Reading.",
            usage: { input: 100, output: 20, cached: 40 }
          })
        )
        assert.isUndefined(error)
        const c = collapse(events)
        assert.deepStrictEqual(c[0], { _tag: "TextDelta", text: "Reading." })
        assert.deepStrictEqual(
          c.filter((e) => e._tag === "ToolCallEnd").map((e) => e._tag === "ToolCallEnd" && e.arguments),
          ["{\"path\":\"a\"}", "{\"path\":\"b\"}"]
        )
        assert.deepStrictEqual(c.slice(-2), [
          { _tag: "Usage", inputTokens: 100, outputTokens: 20, cachedInputTokens: 40, totalTokens: 120 },
          { _tag: "Finish", reason: "tool_calls", model: "test-model" }
        ])
        assert.strictEqual(events.filter((e) => e._tag === "Finish").length, 1)
      }))

    it.scopedLive("reasoning with a signature arrives as deltas and one signature", () =>
      Effect.gen(function*() {
        const { events, error } = yield* against(wire, Reply.text("answer", { reasoning: { text: "thinking hard", signature: "SIG" } }))
        assert.isUndefined(error)
        const c = collapse(events)
        assert.deepStrictEqual(c[0], { _tag: "ReasoningDelta", text: "thinking hard" })
        if (wire === "openai-chat") {
          // Chat Completions carries no reasoning signature
          assert.deepStrictEqual(c[1], { _tag: "TextDelta", text: "answer" })
        } else {
          assert.deepStrictEqual(c[1], { _tag: "ReasoningSignature", signature: "SIG", provider: wire })
        }
      }))
  })
}

const chunk = (delta: unknown, finish: string | null = null) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
const done = "data: [DONE]\n\n"

describe("openai-chat tool-call quirks of compatible servers", () => {
  it.scopedLive("ids only on the first chunk; a call without any id gets a unique fallback id", () =>
    Effect.gen(function*() {
      const { events, error } = yield* against(
        "openai-chat",
        Reply.sse([
          chunk({ tool_calls: [{ index: 0, id: "x1", function: { name: "Read", arguments: "{\"a\"" } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: ":1}" } }] }),
          chunk({ tool_calls: [{ index: 1, function: { name: "Read", arguments: "{}" } }] }),
          chunk({}, "tool_calls"),
          done
        ])
      )
      assert.isUndefined(error)
      const ends = events.flatMap((e) => (e._tag === "ToolCallEnd" ? [e] : []))
      assert.deepStrictEqual(ends[0], { _tag: "ToolCallEnd", id: "x1", name: "Read", arguments: "{\"a\":1}" })
      assert.match(ends[1]?.id ?? "", /^call_[0-9a-f]{8}_1$/)
      assert.strictEqual(ends[1]?.arguments, "{}")
    }))

  it.scopedLive("the same index reused with a new id is a new call; `stop` with calls means tool_calls", () =>
    Effect.gen(function*() {
      const { events, error } = yield* against(
        "openai-chat",
        Reply.sse([
          chunk({ tool_calls: [{ index: 0, id: "a", function: { name: "Read", arguments: "{}" } }] }),
          chunk({ tool_calls: [{ index: 0, id: "b", function: { name: "LS", arguments: "{}" } }] }),
          chunk({}, "stop"),
          done
        ])
      )
      assert.isUndefined(error)
      assert.deepStrictEqual(events.filter((e) => e._tag === "ToolCallStart"), [
        { _tag: "ToolCallStart", id: "a", name: "Read" },
        { _tag: "ToolCallStart", id: "b", name: "LS" }
      ])
      assert.deepStrictEqual(events.at(-1), { _tag: "Finish", reason: "tool_calls" })
    }))

  it.scopedLive("arguments that arrive before the name are held until the call can start", () =>
    Effect.gen(function*() {
      const { events, error } = yield* against(
        "openai-chat",
        Reply.sse([
          chunk({ tool_calls: [{ index: 0, id: "a", function: { arguments: "{\"p\":" } }] }),
          chunk({ tool_calls: [{ index: 0, function: { name: "Read", arguments: "1}" } }] }),
          chunk({ reasoning_content: "hmm" }),
          chunk({}, "tool_calls"),
          done
        ])
      )
      assert.isUndefined(error)
      assert.deepStrictEqual(events, [
        { _tag: "ToolCallStart", id: "a", name: "Read" },
        { _tag: "ToolCallDelta", id: "a", argumentsDelta: "{\"p\":1}" },
        { _tag: "ReasoningDelta", text: "hmm" },
        { _tag: "ToolCallEnd", id: "a", name: "Read", arguments: "{\"p\":1}" },
        { _tag: "Finish", reason: "tool_calls" }
      ])
    }))
})

const named = (type: string, json: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...json })}\n\n`

describe("arguments that arrive whole, without deltas", () => {
  it.scopedLive("anthropic: a tool_use block with its input in the start block and no input_json_delta", () =>
    Effect.gen(function*() {
      const { events } = yield* against(
        "anthropic",
        Reply.sse([
          named("message_start", { message: { usage: { input_tokens: 3, output_tokens: 1 } } }),
          named("content_block_start", { index: 0, content_block: { type: "tool_use", id: "t1", name: "LS", input: {} } }),
          named("content_block_stop", { index: 0 }),
          named("content_block_start", { index: 1, content_block: { type: "tool_use", id: "t2", name: "Read", input: { path: "a" } } }),
          named("content_block_stop", { index: 1 }),
          named("message_delta", { delta: { stop_reason: "tool_use" }, usage: { output_tokens: 4 } }),
          named("message_stop", {})
        ])
      )
      assert.deepStrictEqual(events.filter((e) => e._tag === "ToolCallEnd"), [
        { _tag: "ToolCallEnd", id: "t1", name: "LS", arguments: "{}" },
        { _tag: "ToolCallEnd", id: "t2", name: "Read", arguments: "{\"path\":\"a\"}" }
      ])
    }))

  it.scopedLive("openai-responses: a function_call whose done item holds more than its deltas", () =>
    Effect.gen(function*() {
      const item = { type: "function_call", id: "fc1", call_id: "c1", name: "Read", arguments: "" }
      const { events } = yield* against(
        "openai-responses",
        Reply.sse([
          named("response.output_item.added", { output_index: 0, item }),
          named("response.function_call_arguments.delta", { item_id: "fc1", output_index: 0, delta: "{\"pa" }),
          named("response.output_item.done", { output_index: 0, item: { ...item, arguments: "{\"path\":\"a\"}" } }),
          named("response.completed", { response: { usage: null } })
        ])
      )
      assert.deepStrictEqual(events, [
        { _tag: "ToolCallStart", id: "c1", name: "Read" },
        { _tag: "ToolCallDelta", id: "c1", argumentsDelta: "{\"pa" },
        { _tag: "ToolCallDelta", id: "c1", argumentsDelta: "th\":\"a\"}" },
        { _tag: "ToolCallEnd", id: "c1", name: "Read", arguments: "{\"path\":\"a\"}" },
        { _tag: "Finish", reason: "tool_calls" }
      ])
    }))

  it("the contract checker itself catches a broken stream", () => {
    assert.deepStrictEqual(
      violations({
        events: [
          { _tag: "ToolCallStart", id: "a", name: "x" },
          { _tag: "ToolCallDelta", id: "a", argumentsDelta: "{" },
          { _tag: "ToolCallEnd", id: "a", name: "x", arguments: "{}" },
          { _tag: "Finish", reason: "stop", model: "test-model" },
          { _tag: "Usage", inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, totalTokens: 2 }
        ],
        error: undefined
      }),
      ["2: deltas of a do not add up to its arguments", "3: Finish is not last", "4: Usage not right before Finish", "completed without a Finish"]
    )
  })
})
