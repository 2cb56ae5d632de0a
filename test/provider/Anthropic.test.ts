import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { collapse, serveFixture as fixtureOutcome, TEST_KEY } from "../support/ProviderHarness.js"

const serveFixture = (fixture: string) => fixtureOutcome("anthropic", fixture)

const THINKING =
  "This is a straightforward question about pedestrian safety. I should provide clear, helpful advice about how to safely cross a street. This is basic safety information that could help prevent accidents."
const SIGNATURE =
  "EvMCCkYICxgCKkCHP2cSuEdcJK/0rFwqES/ecn+VurRpNTwI4XNyM0vnNfGsc9OmE8YYHauwBZ/uaRpmlEn2I4/kszHlcpptO82JEgyRMSbPkJYaegxYF3AaDHZbSm9EzZ6CM+YtliIw3iNVP/ilYrfoneo8S2+ad/5xSC62nKbk6joLtKmqXgXwYFJRpjIUjM2V7EGReOPRKtoBKfNHVmdNf7SeMhHalX/ObSeJ1G/NjDyGQAsDjyHGd7uY1r5gAIn3Cpdv5r+gHYJmWT+w2uiKZsBDRoSf4O3Km0l752EhPD4InEhqpCKyqhbUZ3dt5+JVKQHk2iyTBhQMB/XBYgZTstIpRqQRXU5ypcrydgnqj3mD1G9C7YC0ZTCNvFluAx0OL8q+cQwufgfqKquLEf2+XMYzhx9jYkVFEpnf/s1nx6gNBATKfF3Dmrs2r4tWu2QJB+FjlRuDp/8dxUxgJbmyhGxb7XsYeb1vgb7wwzDvP/UhjfQYAQ=="
const WEATHER_ID = "toolu_018acGYLtfR52q9yDbWaEdQZ"

describe("anthropic fixtures through the mock server", () => {
  it.scopedLive("text-basic: text, cumulative usage, end_turn; sends x-api-key and anthropic-version", () =>
    Effect.gen(function*() {
      const { events, error, requests } = yield* serveFixture("sse/anthropic/text-basic.sse")
      const headers = requests[0]?.headers ?? {}
      assert.isUndefined(error)
      assert.deepStrictEqual(events, [
        { _tag: "TextDelta", text: "[" },
        { _tag: "TextDelta", text: "12" },
        { _tag: "TextDelta", text: "345," },
        { _tag: "TextDelta", text: "67890]" },
        { _tag: "Usage", inputTokens: 135, outputTokens: 10, cachedInputTokens: 0, totalTokens: 145 },
        { _tag: "Finish", reason: "stop", model: "claude-sonnet-4-5-20250929" }
      ])
      assert.strictEqual(headers["x-api-key"], TEST_KEY)
      assert.strictEqual(headers["anthropic-version"], "2023-06-01")
    }))

  it.scopedLive("thinking-then-text: reasoning, its signature, then text", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/anthropic/thinking-then-text.sse")
      assert.isUndefined(error)
      const c = collapse(events)
      assert.deepStrictEqual(c.map((e) => e._tag), ["ReasoningDelta", "ReasoningSignature", "TextDelta", "Usage", "Finish"])
      assert.deepStrictEqual(c[0], { _tag: "ReasoningDelta", text: THINKING })
      assert.deepStrictEqual(c[1], { _tag: "ReasoningSignature", signature: SIGNATURE, provider: "anthropic" })
      const text = c[2]?._tag === "TextDelta" ? c[2].text : ""
      assert.strictEqual(text.length, 1021)
      assert.isTrue(text.startsWith("Here are the basic steps for safely crossing the street:\n\n**At intersections"))
      assert.isTrue(text.endsWith("Always prioritize safety over speed when crossing streets."))
      assert.deepStrictEqual(c.slice(3), [
        { _tag: "Usage", inputTokens: 43, outputTokens: 282, cachedInputTokens: 0, totalTokens: 325 },
        { _tag: "Finish", reason: "stop", model: "claude-sonnet-4-20250514" }
      ])
    }))

  it.scopedLive("tool-use-input-json-delta: id, name, raw arguments, tool_use", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/anthropic/tool-use-input-json-delta.sse")
      assert.isUndefined(error)
      const args = "{\"location\": \"San Francisco, CA\", \"units\": \"f\"}"
      assert.strictEqual(events.filter((e) => e._tag === "ToolCallDelta").length, 9) // the empty first fragment is not an event
      assert.deepStrictEqual(collapse(events), [
        { _tag: "ToolCallStart", id: WEATHER_ID, name: "get_weather" },
        { _tag: "ToolCallDelta", id: WEATHER_ID, argumentsDelta: args },
        { _tag: "ToolCallEnd", id: WEATHER_ID, name: "get_weather", arguments: args },
        { _tag: "Usage", inputTokens: 656, outputTokens: 74, cachedInputTokens: 0, totalTokens: 730 },
        { _tag: "Finish", reason: "tool_calls", model: "claude-haiku-4-5-20251001" }
      ])
    }))

  it.scopedLive("text-then-tool-use: text block then tool_use block", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/anthropic/text-then-tool-use.sse")
      assert.isUndefined(error)
      const id = "toolu_01NRLabsLyVHZPKxbKvkfSMn"
      assert.deepStrictEqual(collapse(events), [
        { _tag: "TextDelta", text: "I'll check the current weather in Paris for you." },
        { _tag: "ToolCallStart", id, name: "get_weather" },
        { _tag: "ToolCallDelta", id, argumentsDelta: "{\"location\": \"Paris\"}" },
        { _tag: "ToolCallEnd", id, name: "get_weather", arguments: "{\"location\": \"Paris\"}" },
        { _tag: "Usage", inputTokens: 377, outputTokens: 65, cachedInputTokens: 0, totalTokens: 442 },
        { _tag: "Finish", reason: "tool_calls", model: "claude-sonnet-4-20250514" }
      ])
    }))

  it.scopedLive("max-tokens-mid-tool-input: the unfinished call still ends, raw; finish length", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/anthropic/max-tokens-mid-tool-input.sse")
      assert.isUndefined(error)
      const id = "toolu_01EKqbqmZrGRXy18eN7m9kvY"
      const args =
        "{\"filename\": \"taxes.txt\", \"lines_of_text\": [\n\"# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s\",\n\"\",\n\"## INTRODUCTION\",\n\"\",\n\"Filing taxes"
      assert.deepStrictEqual(collapse(events), [
        {
          _tag: "TextDelta",
          text:
            "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now."
        },
        { _tag: "ToolCallStart", id, name: "make_file" },
        { _tag: "ToolCallDelta", id, argumentsDelta: args },
        { _tag: "ToolCallEnd", id, name: "make_file", arguments: args },
        { _tag: "Usage", inputTokens: 450, outputTokens: 124, cachedInputTokens: 0, totalTokens: 574 },
        { _tag: "Finish", reason: "length", model: "claude-3-7-sonnet-20250219" }
      ])
    }))

  it.scopedLive("derived-truncated-mid-event: partial event never dispatched; truncated, no End", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/anthropic/derived-truncated-mid-event.sse")
      assert.strictEqual(error?._tag, "ProviderMalformed")
      assert.strictEqual(error?._tag === "ProviderMalformed" ? error.reason : "", "truncated")
      assert.deepStrictEqual(collapse(events), [
        { _tag: "ToolCallStart", id: WEATHER_ID, name: "get_weather" },
        { _tag: "ToolCallDelta", id: WEATHER_ID, argumentsDelta: "{\"location\": " }
      ])
    }))

  it.scopedLive("derived-no-message-stop: stop_reason seen but no message_stop is truncated", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/anthropic/derived-no-message-stop.sse")
      assert.strictEqual(error?._tag === "ProviderMalformed" ? error.reason : error?._tag, "truncated")
      assert.include(error?.message, "message_stop")
      assert.deepStrictEqual(collapse(events), [{ _tag: "TextDelta", text: "[12345,67890]" }])
    }))

  it.scopedLive("derived-error-overloaded-mid-stream: overloaded_error after output is ProviderOverloaded", () =>
    Effect.gen(function*() {
      const { events, error } = yield* serveFixture("sse/anthropic/derived-error-overloaded-mid-stream.sse")
      assert.deepStrictEqual(collapse(events), [
        { _tag: "ReasoningDelta", text: THINKING },
        { _tag: "ReasoningSignature", signature: SIGNATURE, provider: "anthropic" },
        { _tag: "TextDelta", text: "Here are the basic steps for" }
      ])
      assert.strictEqual(error?._tag, "ProviderOverloaded")
      assert.isFalse(error !== undefined && "retryAfterMs" in error && error.retryAfterMs !== undefined)
    }))
})
