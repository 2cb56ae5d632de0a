import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import type { TaskEvent } from "../../src/domain/Events.js"
import { ToolCallId } from "../../src/domain/Ids.js"
import type { ProviderEvent } from "../../src/domain/ProviderEvent.js"
import { emptyAssembly, end, partial, step, stepAll } from "../../src/domain/RunAssembler.js"

const run = (events: ReadonlyArray<ProviderEvent>) => {
  let s = emptyAssembly
  const out: Array<TaskEvent> = []
  for (const e of events) {
    const [next, emitted] = step(s, e)
    s = next
    out.push(...emitted)
  }
  const ended = end(s)
  return { out: [...out, ...ended.events], outcome: ended.outcome, assembly: ended.assembly }
}

const usage: ProviderEvent = { _tag: "Usage", inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, totalTokens: 15 }

describe("RunAssembler", () => {
  it("text: deltas, then the complete message, usage last", () => {
    const { out, outcome } = run([
      { _tag: "TextDelta", text: "Hel" },
      usage,
      { _tag: "TextDelta", text: "lo" },
      { _tag: "Finish", reason: "stop" }
    ])
    assert.deepStrictEqual(out.map((e) => e.type), ["text_delta", "text_delta", "assistant_message", "token_usage"])
    assert.deepStrictEqual(out[2], { type: "assistant_message", content: "Hello" })
    assert.strictEqual(outcome, "end_turn")
  })

  it("reasoning closes with its signature before the text starts", () => {
    const { out } = run([
      { _tag: "ReasoningDelta", text: "hmm" },
      { _tag: "ReasoningSignature", signature: "sig", provider: "anthropic" },
      { _tag: "TextDelta", text: "ok" },
      { _tag: "Finish", reason: "stop" }
    ])
    assert.deepStrictEqual(out, [
      { type: "reasoning_delta", content: "hmm" },
      { type: "reasoning_message", content: "hmm", signature: "sig", provider: "anthropic" },
      { type: "text_delta", content: "ok" },
      { type: "assistant_message", content: "ok" }
    ])
  })

  it("interleaved tool calls: deltas keyed by id, each call complete after its last delta", () => {
    const { out, outcome } = run([
      { _tag: "ToolCallStart", id: "a", name: "Read" },
      { _tag: "ToolCallStart", id: "b", name: "LS" },
      { _tag: "ToolCallDelta", id: "a", argumentsDelta: "{\"file_path\":" },
      { _tag: "ToolCallDelta", id: "b", argumentsDelta: "{}" },
      { _tag: "ToolCallDelta", id: "a", argumentsDelta: "\"x\"}" },
      { _tag: "ToolCallEnd", id: "b", name: "LS", arguments: "{}" },
      { _tag: "ToolCallEnd", id: "a", name: "Read", arguments: "{\"file_path\":\"x\"}" },
      { _tag: "Finish", reason: "tool_calls" }
    ])
    const a = out.filter((e) => "tool_call_id" in e && e.tool_call_id === "a")
    assert.deepStrictEqual(a.map((e) => e.type), ["tool_call_delta", "tool_call_delta", "tool_call"])
    assert.strictEqual(a.filter((e) => e.type === "tool_call_delta").map((e) => (e.type === "tool_call_delta" ? e.arguments : "")).join(""), "{\"file_path\":\"x\"}")
    assert.strictEqual(outcome, "tool_calls")
  })

  it("a whole call in one chunk (start + end) still gets a delta that concatenates to it", () => {
    const { out } = run([
      { _tag: "ToolCallStart", id: "c", name: "Bash" },
      { _tag: "ToolCallEnd", id: "c", name: "Bash", arguments: "{\"command\":\"ls\"}" },
      { _tag: "Finish", reason: "tool_calls" }
    ])
    assert.deepStrictEqual(out.map((e) => e.type), ["tool_call_delta", "tool_call"])
  })

  it("a call id the provider repeats in one request is heard once: the first call stands", () => {
    const { assembly, out } = run([
      { _tag: "ToolCallStart", id: "c", name: "Bash" },
      { _tag: "ToolCallEnd", id: "c", name: "Bash", arguments: "{\"command\":\"ls\"}" },
      { _tag: "ToolCallStart", id: "c", name: "Bash" },
      { _tag: "ToolCallDelta", id: "c", argumentsDelta: "{\"command\":" },
      { _tag: "ToolCallEnd", id: "c", name: "Bash", arguments: "{\"command\":\"rm -rf /\"}" },
      { _tag: "Finish", reason: "tool_calls" }
    ])
    assert.deepStrictEqual(out.map((e) => e.type), ["tool_call_delta", "tool_call"])
    assert.deepStrictEqual(assembly.messages.map((m) => m.type === "tool_call" && m.arguments), ["{\"command\":\"ls\"}"])
  })

  it("bad JSON arguments and unknown tool names pass through raw", () => {
    const { out } = run([
      { _tag: "ToolCallEnd", id: "d", name: "NoSuchTool", arguments: "{not json" },
      { _tag: "Finish", reason: "tool_calls" }
    ])
    assert.deepStrictEqual(out[1], { type: "tool_call", tool_call_id: ToolCallId.make("d"), name: "NoSuchTool", arguments: "{not json" })
  })

  it("no text and no call is an empty response; length is max_tokens", () => {
    assert.strictEqual(run([{ _tag: "Finish", reason: "stop" }]).outcome, "empty")
    assert.strictEqual(run([{ _tag: "TextDelta", text: "  " }, { _tag: "Finish", reason: "stop" }]).outcome, "empty")
    assert.strictEqual(run([{ _tag: "ReasoningDelta", text: "t" }, { _tag: "Finish", reason: "stop" }]).outcome, "empty")
    assert.strictEqual(run([{ _tag: "TextDelta", text: "cut" }, { _tag: "Finish", reason: "length" }]).outcome, "max_tokens")
  })

  it("a call still open at the end is incomplete and dropped", () => {
    const { out, outcome } = run([
      { _tag: "ToolCallStart", id: "e", name: "Write" },
      { _tag: "ToolCallDelta", id: "e", argumentsDelta: "{\"file" },
      { _tag: "Finish", reason: "length" }
    ])
    assert.isFalse(out.some((e) => e.type === "tool_call"))
    assert.strictEqual(outcome, "max_tokens")
  })

  it("partial() carries open text and complete calls for a retry", () => {
    let s = emptyAssembly
    for (const e of [
      { _tag: "TextDelta", text: "Let me look" },
      { _tag: "ToolCallEnd", id: "f", name: "Read", arguments: "{}" },
      { _tag: "TextDelta", text: " and then" }
    ] as const) s = step(s, e)[0]
    const p = partial(s)
    assert.strictEqual(p.text, "Let me look and then")
    assert.deepStrictEqual(p.toolCalls.map((c) => c.tool_call_id), ["f"])
  })

  it("stepAll over a chunk of events is step over each of them, in order", () => {
    const events: ReadonlyArray<ProviderEvent> = [
      { _tag: "ReasoningDelta", text: "hm" },
      { _tag: "TextDelta", text: "I will " },
      { _tag: "ToolCallStart", id: "a", name: "Read" },
      { _tag: "ToolCallDelta", id: "a", argumentsDelta: "{}" },
      { _tag: "ToolCallEnd", id: "a", name: "Read", arguments: "{}" },
      usage,
      { _tag: "Finish", reason: "tool_calls" }
    ]
    const whole = run(events)
    for (const cut of [0, 1, 3, events.length]) {
      const [first, out1] = stepAll(emptyAssembly, events.slice(0, cut))
      const [second, out2] = stepAll(first, events.slice(cut))
      const ended = end(second)
      assert.deepStrictEqual([...out1, ...out2, ...ended.events], whole.out, `cut at ${cut}`)
      assert.deepStrictEqual(ended.assembly, whole.assembly)
    }
    assert.deepStrictEqual(stepAll(emptyAssembly, []), [emptyAssembly, []])
  })

  it("stepAll, which grows a stretch of deltas in one piece, is step over each event for any mix and any cut", () => {
    const event = FastCheck.oneof(
      FastCheck.constantFrom("", "a", "bc ").map((text): ProviderEvent => ({ _tag: "TextDelta", text })),
      FastCheck.constantFrom("", "r", "st").map((text): ProviderEvent => ({ _tag: "ReasoningDelta", text })),
      FastCheck.constant<ProviderEvent>({ _tag: "ReasoningSignature", signature: "sig", provider: "anthropic" }),
      FastCheck.constantFrom("a", "b").map((id): ProviderEvent => ({ _tag: "ToolCallStart", id, name: "Read" })),
      FastCheck.constantFrom("a", "b").map((id): ProviderEvent => ({ _tag: "ToolCallDelta", id, argumentsDelta: "{" })),
      FastCheck.constantFrom("a", "b").map((id): ProviderEvent => ({ _tag: "ToolCallEnd", id, name: "Read", arguments: "{}" })),
      FastCheck.constant(usage)
    )
    FastCheck.assert(
      FastCheck.property(FastCheck.array(event, { maxLength: 30 }), FastCheck.array(FastCheck.nat(30), { maxLength: 4 }), (events, cuts) => {
        const whole = run(events)
        const at = [...new Set([0, ...cuts.map((c) => Math.min(c, events.length)), events.length])].sort((a, b) => a - b)
        let s = emptyAssembly
        const out: Array<TaskEvent> = []
        for (let i = 1; i < at.length; i++) {
          const [next, emitted] = stepAll(s, events.slice(at[i - 1], at[i]))
          s = next
          out.push(...emitted)
        }
        const ended = end(s)
        assert.deepStrictEqual([...out, ...ended.events], whole.out)
        assert.deepStrictEqual(ended.assembly, whole.assembly)
      }),
      { numRuns: 300 }
    )
  })
})
