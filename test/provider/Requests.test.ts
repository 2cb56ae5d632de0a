import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import type { Message } from "../../src/domain/Messages.js"
import { encodeAnthropicRequest } from "../../src/services/provider/AnthropicRequest.js"
import { encodeChatRequest } from "../../src/services/provider/OpenAiChatRequest.js"
import { encodeResponsesRequest } from "../../src/services/provider/OpenAiResponsesRequest.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { assistant, call, liveProvider, reasoning, request, result, settings, user } from "../support/ProviderHarness.js"

const tool = { name: "Read", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string" } } } }

/** A tool-use round trip with returns out of call order, steering, reasoning from three sources and a summary. */
const history: ReadonlyArray<Message> = [
  { type: "summary_message", content: "[context_summary]earlier work[/context_summary]" },
  user("read a and b"),
  reasoning("unsigned thoughts"),
  reasoning("claude thoughts", "sig-claude", "anthropic"),
  reasoning("gpt thoughts", "enc-gpt", "openai-responses"),
  assistant("Reading both."),
  call("A", "Read", "{\"path\":\"a\"}"),
  call("B", "Read", "{\"path\":\"b\"}"),
  result("B", "bbb", "error"),
  user("[user_steering]also c[/user_steering]", "u2"),
  result("A", "aaa")
]

describe("openai-chat request body", () => {
  it("one assistant turn with all calls, tool messages in call order, steering after them; no reasoning", () => {
    const body = encodeChatRequest(request({ history, tools: [tool] }), { model: "m", baseUrl: "http://127.0.0.1:11434/v1" })
    assert.deepStrictEqual(body.messages, [
      { role: "system", content: "You are a test." },
      { role: "user", content: "[context_summary]earlier work[/context_summary]" },
      { role: "user", content: "read a and b" },
      {
        role: "assistant",
        content: "Reading both.",
        tool_calls: [
          { id: "A", type: "function", function: { name: "Read", arguments: "{\"path\":\"a\"}" } },
          { id: "B", type: "function", function: { name: "Read", arguments: "{\"path\":\"b\"}" } }
        ]
      },
      { role: "tool", tool_call_id: "A", content: "aaa" },
      { role: "tool", tool_call_id: "B", content: "bbb" },
      { role: "user", content: "[user_steering]also c[/user_steering]" }
    ])
    assert.deepStrictEqual(body.tools, [{ type: "function", function: tool }])
    assert.deepStrictEqual(body.stream_options, { include_usage: true })
    assert.strictEqual(body.model, "m")
  })

  it("thinking → reasoning_effort; max tokens field by host; no empty tools", () => {
    const local = encodeChatRequest(request({ thinking: "high", maxOutputTokens: 100 }), { model: "m", baseUrl: "http://localhost:8000/v1" })
    assert.strictEqual(local.reasoning_effort, "high")
    assert.strictEqual("max_tokens" in local ? local.max_tokens : 0, 100)
    assert.isFalse("tools" in local)
    const openai = encodeChatRequest(request({ thinking: "off", maxOutputTokens: 100, model: "gpt-x" }), {
      model: "m",
      baseUrl: "https://api.openai.com/v1"
    })
    assert.strictEqual("max_completion_tokens" in openai ? openai.max_completion_tokens : 0, 100)
    assert.isFalse("max_tokens" in openai || "reasoning_effort" in openai)
    assert.strictEqual(openai.model, "gpt-x")
  })

  it("an assistant turn with only tool calls has null content", () => {
    const body = encodeChatRequest(request({ history: [user("x"), call("A", "Read", "{}"), result("A", "ok")] }), {
      model: "m",
      baseUrl: "http://h/v1"
    })
    assert.deepStrictEqual(body.messages[2], {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "A", type: "function", function: { name: "Read", arguments: "{}" } }]
    })
  })
})

describe("anthropic request body", () => {
  it("signed anthropic thinking only; tool_results first, in call order, with the steering text in one user message", () => {
    const body = encodeAnthropicRequest(request({ history, tools: [tool] }), { model: "claude" })
    assert.deepStrictEqual(body.messages, [
      {
        role: "user",
        content: [
          { type: "text", text: "[context_summary]earlier work[/context_summary]" },
          { type: "text", text: "read a and b" }
        ]
      },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "claude thoughts", signature: "sig-claude" },
          { type: "text", text: "Reading both." },
          { type: "tool_use", id: "A", name: "Read", input: { path: "a" } },
          { type: "tool_use", id: "B", name: "Read", input: { path: "b" } }
        ]
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "A", content: "aaa" },
          { type: "tool_result", tool_use_id: "B", content: "bbb", is_error: true },
          { type: "text", text: "[user_steering]also c[/user_steering]" }
        ]
      }
    ])
    assert.strictEqual(body.system, "You are a test.")
    assert.deepStrictEqual(body.tools, [{ name: "Read", description: "Read a file", input_schema: tool.parameters }])
    assert.strictEqual(body.max_tokens, 8192)
    assert.isFalse("thinking" in body)
  })

  it("thinking level → budget_tokens, with max_tokens above it", () => {
    const body = encodeAnthropicRequest(request({ thinking: "medium" }), { model: "claude" })
    assert.deepStrictEqual(body.thinking, { type: "enabled", budget_tokens: 8192 })
    assert.strictEqual(body.max_tokens, 16384)
    const capped = encodeAnthropicRequest(request({ thinking: "high", maxOutputTokens: 4096 }), { model: "claude" })
    assert.deepStrictEqual(capped.thinking, { type: "enabled", budget_tokens: 3072 })
    assert.strictEqual(capped.max_tokens, 4096)
    const tooSmall = encodeAnthropicRequest(request({ thinking: "low", maxOutputTokens: 1500 }), { model: "claude" })
    assert.isFalse("thinking" in tooSmall)
  })

  it("thinking is left off for a tool-use continuation whose last assistant turn has no signed thinking", () => {
    const continuation = [user("x"), reasoning("gpt", "enc", "openai-responses"), call("A", "Read", "{}"), result("A", "ok")]
    assert.isFalse("thinking" in encodeAnthropicRequest(request({ history: continuation, thinking: "low" }), { model: "c" }))
    const signed = [user("x"), reasoning("t", "sig", "anthropic"), call("A", "Read", "{}"), result("A", "ok")]
    assert.isTrue("thinking" in encodeAnthropicRequest(request({ history: signed, thinking: "low" }), { model: "c" }))
  })

  it("roles alternate, redacted thinking replays as data, bad JSON arguments stay visible, empty text is dropped", () => {
    const body = encodeAnthropicRequest(
      request({
        system: "",
        history: [
          user("one"),
          reasoning("unsigned only"),
          user("two", "u2"),
          reasoning("", "opaque", "anthropic-redacted"),
          assistant(""),
          call("A", "Read", "{not json")
        ]
      }),
      { model: "c" }
    )
    assert.isFalse("system" in body)
    assert.deepStrictEqual(body.messages, [
      { role: "user", content: [{ type: "text", text: "one" }, { type: "text", text: "two" }] },
      {
        role: "assistant",
        content: [
          { type: "redacted_thinking", data: "opaque" },
          { type: "tool_use", id: "A", name: "Read", input: { raw_arguments: "{not json" } }
        ]
      }
    ])
  })
})

describe("openai-responses request body", () => {
  it("stateless items: own encrypted reasoning without ids, calls and outputs paired, store false", () => {
    const body = encodeResponsesRequest(request({ history, tools: [tool], thinking: "low" }), { model: "gpt" })
    assert.deepStrictEqual(body.input, [
      { type: "message", role: "user", content: "[context_summary]earlier work[/context_summary]" },
      { type: "message", role: "user", content: "read a and b" },
      { type: "reasoning", summary: [{ type: "summary_text", text: "gpt thoughts" }], encrypted_content: "enc-gpt" },
      { type: "message", role: "assistant", content: "Reading both." },
      { type: "function_call", call_id: "A", name: "Read", arguments: "{\"path\":\"a\"}" },
      { type: "function_call", call_id: "B", name: "Read", arguments: "{\"path\":\"b\"}" },
      { type: "function_call_output", call_id: "A", output: "aaa" },
      { type: "function_call_output", call_id: "B", output: "bbb" },
      { type: "message", role: "user", content: "[user_steering]also c[/user_steering]" }
    ])
    assert.strictEqual(body.instructions, "You are a test.")
    assert.deepStrictEqual(body.reasoning, { effort: "low", summary: "auto" })
    assert.deepStrictEqual(body.include, ["reasoning.encrypted_content"])
    assert.strictEqual(body.store, false)
    assert.deepStrictEqual(body.tools, [{ type: "function", ...tool, strict: false }])
  })

  it("no reasoning and no encrypted include unless thinking is on", () => {
    const body = encodeResponsesRequest(request({ thinking: "off" }), { model: "gpt" })
    assert.isFalse("reasoning" in body || "include" in body)
  })
})

describe("what goes over the wire", () => {
  for (const wire of ["openai-chat", "anthropic", "openai-responses"] as const) {
    it.scopedLive(`${wire}: the server receives the encoded body at the conventional path`, () =>
      Effect.gen(function*() {
        const server = yield* MockModelServer.make({ replies: [Reply.text("ok")] })
        const live = settings(server.baseUrl(wire))
        const provider = yield* liveProvider(wire, live)
        const req = request({ history, tools: [tool] })
        yield* Stream.runDrain(provider.stream(req)).pipe(Effect.orDie)
        const [sent] = yield* server.requests
        const expected = wire === "openai-chat"
          ? { path: "/v1/chat/completions", body: encodeChatRequest(req, live) }
          : wire === "anthropic"
          ? { path: "/v1/messages", body: encodeAnthropicRequest(req, live) }
          : { path: "/v1/responses", body: encodeResponsesRequest(req, live) }
        assert.strictEqual(sent?.path, expected.path)
        assert.deepStrictEqual(sent?.json, JSON.parse(JSON.stringify(expected.body)))
        assert.strictEqual(sent?.headers["accept"], "text/event-stream")
      }))
  }
})
