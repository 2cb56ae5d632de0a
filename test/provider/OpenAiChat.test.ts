import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ProviderEvent } from "../../src/domain/ProviderEvent.js"
import { collapse, serveFixture as fixtureOutcome } from "../support/ProviderHarness.js"

const serveFixture = (fixture: string) => fixtureOutcome("openai-chat", fixture)

const WEATHER_TEXT =
  "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app."

const WEATHER_ARGS = "{\"city\": \"Edinburgh\", \"country\": \"GB\", \"units\": \"c\"}"
const STOCK_ARGS = "{\"ticker\": \"AAPL\", \"exchange\": \"NASDAQ\"}"
const W = "call_JMW1whyEaYG438VE1OIflxA2"
const S = "call_DNYTawLBoN8fj3KN6qU9N1Ou"

const tags = (events: ReadonlyArray<ProviderEvent>) => events.map((e) => e._tag)

describe("openai-chat fixtures through the mock server", () => {
  it.scopedLive("text-include-usage: text, usage, stop", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-chat/text-include-usage.sse")
      assert.isUndefined(error)
      assert.strictEqual(events.filter((e) => e._tag === "TextDelta").length, 30)
      assert.deepStrictEqual(collapse(events), [
        { _tag: "TextDelta", text: WEATHER_TEXT },
        { _tag: "Usage", inputTokens: 14, outputTokens: 30, cachedInputTokens: 0, totalTokens: 44 },
        { _tag: "Finish", reason: "stop", model: "gpt-4o-2024-08-06" }
      ])
    }))

  it.scopedLive("parallel-tool-calls-include-usage: two calls, ids, names, raw arguments", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-chat/parallel-tool-calls-include-usage.sse")
      assert.isUndefined(error)
      assert.deepStrictEqual(collapse(events), [
        { _tag: "ToolCallStart", id: W, name: "GetWeatherArgs" },
        { _tag: "ToolCallDelta", id: W, argumentsDelta: WEATHER_ARGS },
        { _tag: "ToolCallStart", id: S, name: "get_stock_price" },
        { _tag: "ToolCallDelta", id: S, argumentsDelta: STOCK_ARGS },
        { _tag: "ToolCallEnd", id: W, name: "GetWeatherArgs", arguments: WEATHER_ARGS },
        { _tag: "ToolCallEnd", id: S, name: "get_stock_price", arguments: STOCK_ARGS },
        { _tag: "Usage", inputTokens: 149, outputTokens: 60, cachedInputTokens: 0, totalTokens: 209 },
        { _tag: "Finish", reason: "tool_calls", model: "gpt-4o-2024-08-06" }
      ])
    }))

  it.scopedLive("parallel-tool-calls-obfuscation-2025: current field set, usage:null on every chunk", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-chat/parallel-tool-calls-obfuscation-2025.sse")
      assert.isUndefined(error)
      const a = "call_3rqTYrA6H21AYUaRGP4F66oq"
      const b = "call_Xw9XMKBJU48kAAd78WgIswDx"
      assert.deepStrictEqual(events, [
        { _tag: "ToolCallStart", id: a, name: "get_country" },
        { _tag: "ToolCallDelta", id: a, argumentsDelta: "{}" },
        { _tag: "ToolCallStart", id: b, name: "get_product_name" },
        { _tag: "ToolCallDelta", id: b, argumentsDelta: "{}" },
        { _tag: "ToolCallEnd", id: a, name: "get_country", arguments: "{}" },
        { _tag: "ToolCallEnd", id: b, name: "get_product_name", arguments: "{}" },
        { _tag: "Usage", inputTokens: 364, outputTokens: 40, cachedInputTokens: 0, totalTokens: 404 },
        { _tag: "Finish", reason: "tool_calls", model: "gpt-4o-2024-08-06" }
      ])
    }))

  it.scopedLive("derived-interleaved-parallel-tool-calls: fragments keyed by index", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-chat/derived-interleaved-parallel-tool-calls.sse")
      assert.isUndefined(error)
      const deltas = events.flatMap((e) => (e._tag === "ToolCallDelta" ? [e] : []))
      assert.deepStrictEqual(deltas.slice(0, 4).map((d) => d.id), [W, S, W, S])
      assert.strictEqual(deltas.filter((d) => d.id === W).map((d) => d.argumentsDelta).join(""), WEATHER_ARGS)
      assert.strictEqual(deltas.filter((d) => d.id === S).map((d) => d.argumentsDelta).join(""), STOCK_ARGS)
      assert.deepStrictEqual(events.slice(0, 2), [
        { _tag: "ToolCallStart", id: W, name: "GetWeatherArgs" },
        { _tag: "ToolCallStart", id: S, name: "get_stock_price" }
      ])
      assert.deepStrictEqual(events.slice(-4), [
        { _tag: "ToolCallEnd", id: W, name: "GetWeatherArgs", arguments: WEATHER_ARGS },
        { _tag: "ToolCallEnd", id: S, name: "get_stock_price", arguments: STOCK_ARGS },
        { _tag: "Usage", inputTokens: 149, outputTokens: 60, cachedInputTokens: 0, totalTokens: 209 },
        { _tag: "Finish", reason: "tool_calls", model: "gpt-4o-2024-08-06" }
      ])
    }))

  it.scopedLive("derived-truncated-mid-event: the partial line is never dispatched; truncated", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-chat/derived-truncated-mid-event.sse")
      assert.deepStrictEqual(error && { _tag: error._tag, reason: "reason" in error ? error.reason : undefined }, {
        _tag: "ProviderMalformed",
        reason: "truncated"
      })
      assert.deepStrictEqual(collapse(events), [
        { _tag: "ToolCallStart", id: W, name: "GetWeatherArgs" },
        { _tag: "ToolCallDelta", id: W, argumentsDelta: WEATHER_ARGS },
        { _tag: "ToolCallStart", id: S, name: "get_stock_price" },
        { _tag: "ToolCallDelta", id: S, argumentsDelta: "{\"ticker\"" }
      ])
    }))

  it.scopedLive("derived-no-done-sentinel: complete text but no [DONE] is truncated, no Finish", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-chat/derived-no-done-sentinel.sse")
      assert.strictEqual(error?._tag, "ProviderMalformed")
      assert.include(error?.message, "[DONE]")
      assert.deepStrictEqual(collapse(events), [{ _tag: "TextDelta", text: WEATHER_TEXT }])
    }))

  it.scopedLive("derived-error-mid-stream: server_error after text is ProviderServerError", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-chat/derived-error-mid-stream.sse")
      assert.deepStrictEqual(collapse(events), [{ _tag: "TextDelta", text: "I'm unable to" }])
      assert.strictEqual(error?._tag, "ProviderServerError")
      assert.strictEqual(error?._tag === "ProviderServerError" ? error.status : 0, 500)
      assert.include(error?.message, "server had an error")
    }))
})

describe("openai-compatible fixtures through the openai-chat layer", () => {
  it.scopedLive("ollama: whole calls in one chunk each", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-compatible/ollama-parallel-tool-calls.sse")
      assert.isUndefined(error)
      const a1 = "{\"command\":\"ls -la\"}"
      const a2 = "{\"command\":\"ls -la\",\"cwd\":\"/path/to/directory\"}"
      assert.deepStrictEqual(events, [
        { _tag: "ToolCallStart", id: "call_809l7n8f", name: "run_command" },
        { _tag: "ToolCallDelta", id: "call_809l7n8f", argumentsDelta: a1 },
        { _tag: "ToolCallStart", id: "call_oqp1e2a1", name: "run_command" },
        { _tag: "ToolCallDelta", id: "call_oqp1e2a1", argumentsDelta: a2 },
        { _tag: "ToolCallEnd", id: "call_809l7n8f", name: "run_command", arguments: a1 },
        { _tag: "ToolCallEnd", id: "call_oqp1e2a1", name: "run_command", arguments: a2 },
        { _tag: "Finish", reason: "tool_calls", model: "qwen2.5-coder:7b-instruct-q8_0" }
      ])
    }))

  it.scopedLive("vllm: first chunk without an arguments key", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-compatible/vllm-streamed-tool-call-args.sse")
      assert.isUndefined(error)
      const id = "chatcmpl-tool-ca99dda515524c6abe47d1ea22813507"
      assert.deepStrictEqual(collapse(events), [
        { _tag: "ToolCallStart", id, name: "run_command" },
        { _tag: "ToolCallDelta", id, argumentsDelta: "{\"command\": \"ls\"}" },
        { _tag: "ToolCallEnd", id, name: "run_command", arguments: "{\"command\": \"ls\"}" },
        { _tag: "Finish", reason: "tool_calls" }
      ])
    }))

  it.scopedLive("llama.cpp: tiny fragments, timings, no usage", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-compatible/llamacpp-tool-call.sse")
      assert.isUndefined(error)
      assert.deepStrictEqual(collapse(events), [
        { _tag: "ToolCallStart", id: "v2dh...", name: "run_command" },
        { _tag: "ToolCallDelta", id: "v2dh...", argumentsDelta: "{\"command\":\"pwd\"}" },
        { _tag: "ToolCallEnd", id: "v2dh...", name: "run_command", arguments: "{\"command\":\"pwd\"}" },
        { _tag: "Finish", reason: "tool_calls", model: "qwen3coder30b" }
      ])
    }))

  it.scopedLive("groq: reasoning deltas, then tool_use_failed is ProviderMalformed{bad_json} (retried)", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-compatible/groq-reasoning-then-error-event.sse")
      assert.deepStrictEqual(tags(collapse(events)), ["ReasoningDelta"])
      const first = collapse(events)[0]
      assert.isTrue(first?._tag === "ReasoningDelta" && first.text.startsWith("We need to call the tool with invalid parameters"))
      assert.strictEqual(first?._tag === "ReasoningDelta" ? first.text.length : 0, 412)
      assert.strictEqual(error?._tag, "ProviderMalformed")
      assert.strictEqual(error?._tag === "ProviderMalformed" ? error.reason : "", "bad_json")
      assert.include(error?.message, "tool_use_failed")
    }))
})
