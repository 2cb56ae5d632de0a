import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { collapse, serveFixture as fixtureOutcome } from "../support/ProviderHarness.js"

const serveFixture = (fixture: string) => fixtureOutcome("openai-responses", fixture)

describe("openai-responses fixtures through the mock server", () => {
  it.scopedLive("text-with-usage: text deltas, usage, stop", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-responses/text-with-usage.sse")
      assert.isUndefined(error)
      assert.strictEqual(events.filter((e) => e._tag === "TextDelta").length, 7)
      assert.deepStrictEqual(collapse(events), [
        { _tag: "TextDelta", text: "The capital of France is Paris." },
        { _tag: "Usage", inputTokens: 278, outputTokens: 9, cachedInputTokens: 0, totalTokens: 287 },
        { _tag: "Finish", reason: "stop", model: "gpt-4o-2024-08-06" }
      ])
    }))

  it.scopedLive("function-call-arguments-delta: call_id, name, raw arguments, tool_calls", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-responses/function-call-arguments-delta.sse")
      assert.isUndefined(error)
      const id = "call_kL0PCQV7M2WMoVX8V8OtYSAL"
      assert.strictEqual(events.filter((e) => e._tag === "ToolCallDelta").length, 5)
      assert.deepStrictEqual(collapse(events), [
        { _tag: "ToolCallStart", id, name: "get_capital" },
        { _tag: "ToolCallDelta", id, argumentsDelta: "{\"country\":\"France\"}" },
        { _tag: "ToolCallEnd", id, name: "get_capital", arguments: "{\"country\":\"France\"}" },
        { _tag: "Usage", inputTokens: 255, outputTokens: 16, cachedInputTokens: 0, totalTokens: 271 },
        { _tag: "Finish", reason: "tool_calls", model: "gpt-4o-2024-08-06" }
      ])
    }))

  it.scopedLive("reasoning-summary-then-function-call: summary, encrypted content, then the call", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-responses/reasoning-summary-then-function-call.sse")
      assert.isUndefined(error)
      const c = collapse(events)
      assert.deepStrictEqual(c.map((e) => e._tag), [
        "ReasoningDelta",
        "ReasoningSignature",
        "ToolCallStart",
        "ToolCallDelta",
        "ToolCallEnd",
        "Usage",
        "Finish"
      ])
      assert.deepStrictEqual(c[0], {
        _tag: "ReasoningDelta",
        text:
          "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then multiply the result by 3, and finally multiply that by 10, reporting the final product."
      })
      const signature = c[1]?._tag === "ReasoningSignature" ? c[1] : undefined
      assert.strictEqual(signature?.provider, "openai-responses")
      assert.strictEqual(signature?.signature.length, 1060)
      assert.isTrue(signature?.signature.startsWith("gAAAAABpPDIVOKrsHNZ0GwsoEKA_IG"))
      assert.isTrue(signature?.signature.endsWith("_8XMnObfNxat0wz4uQ=="))
      const id = "call_AB6AaRZ1FYZB2RwS6A5vbdqn"
      const args = "{\"a\":12,\"b\":7,\"op\":\"add\"}"
      assert.deepStrictEqual(c.slice(2), [
        { _tag: "ToolCallStart", id, name: "calculator" },
        { _tag: "ToolCallDelta", id, argumentsDelta: args },
        { _tag: "ToolCallEnd", id, name: "calculator", arguments: args },
        { _tag: "Usage", inputTokens: 134, outputTokens: 28, cachedInputTokens: 0, totalTokens: 162 },
        { _tag: "Finish", reason: "tool_calls", model: "gpt-5.1-codex-max" }
      ])
    }))

  it.scopedLive("error-event-insufficient-quota: billing error after 200 is ProviderQuotaExceeded", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/openai-responses/error-event-insufficient-quota.sse")
      assert.deepStrictEqual(events, [])
      assert.strictEqual(error?._tag, "ProviderQuotaExceeded")
      assert.include(error?.message, "insufficient_quota")
    }))
})
