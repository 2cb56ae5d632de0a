import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { type TaskEvent, TaskEvent as TaskEventSchema, TaskEventFromJson } from "../../src/domain/Events.js"
import { Otid, RunId, ToolCallId } from "../../src/domain/Ids.js"
import { encodeEventJson } from "../../src/domain/EventJson.js"

const run_id = RunId.make("run-1")
const otid = Otid.make("otid-1")
const id = ToolCallId.make("call_1")

/** One sample of every message, event and delta, each as a numbered run chunk where it can be one. */
const samples: ReadonlyArray<TaskEvent> = [
  { type: "user_message", content: "hello", otid },
  { type: "assistant_message", content: "hi", run_id, seq: 5 },
  { type: "reasoning_message", content: "think", signature: "sig==", provider: "anthropic", run_id, seq: 3 },
  { type: "tool_call", tool_call_id: id, name: "Read", arguments: "{\"file_path\":\"a\"}", run_id, seq: 6 },
  { type: "tool_return", tool_call_id: id, status: "success", content: "1\tx", otid, exit_code: 0, duration_ms: 12 },
  { type: "tool_return", tool_call_id: id, status: "denied", content: "Tool call denied by user.", otid },
  { type: "summary_message", content: "summary", run_id, seq: 2 },
  { type: "request_begin", attempt: 0, run_id, seq: 1 },
  { type: "request_end", status: "retrying", attempt: 0, retry_in_ms: 250, error: { tag: "ProviderTimeout", message: "stalled" }, run_id, seq: 9 },
  { type: "token_usage", input_tokens: 10, output_tokens: 5, cached_input_tokens: 2, total_tokens: 15, run_id, seq: 8 },
  { type: "approval_decision", tool_call_id: id, decision: "allow_always", source: "user", rule: "Bash(npm test:*)" },
  { type: "approval_request", tool_call_id: id, name: "Bash", arguments: "{\"command\":\"npm test\"}", grant: "Bash(npm test:*)" },
  { type: "turn_retried", attempt: 1, content: "[turn_retried]partial[/turn_retried]", run_id, seq: 10 },
  { type: "stop_reason", reason: "requires_approval", run_id, seq: 11 },
  { type: "compaction_begin", reason: "context", mode: "summarize", run_id, seq: 1 },
  { type: "compaction_end", status: "ok", segment: 2, run_id, seq: 4 },
  { type: "abort", reason: "user" },
  { type: "wait", reason: "busy", retry_in_ms: 10_000 },
  { type: "text_delta", content: "h", run_id, seq: 4 },
  { type: "reasoning_delta", content: "t", run_id, seq: 2 },
  { type: "tool_call_delta", tool_call_id: id, name: "Read", arguments: "{\"file", run_id, seq: 5 }
]

describe("TaskEvent", () => {
  it("has a sample of every type", () => {
    const types = new Set(samples.map((s) => s.type))
    assert.strictEqual(types.size, 20)
  })

  it("round-trips every type through encode/decode and JSON unchanged", () => {
    for (const sample of samples) {
      const encoded = Schema.encodeSync(TaskEventSchema)(sample)
      assert.deepStrictEqual(encoded, sample)
      const json = JSON.stringify(encoded)
      assert.deepStrictEqual(Schema.decodeSync(TaskEventFromJson)(json), sample)
    }
  })

  it("a client-side wait is one --json line as the issue names it", () => {
    assert.strictEqual(encodeEventJson({ type: "wait", reason: "stream_reconnect", retry_in_ms: 250 }), `{"type":"wait","reason":"stream_reconnect","retry_in_ms":250}`)
  })

  it("uses snake_case field names and a type field", () => {
    for (const sample of samples) {
      for (const key of Object.keys(Schema.encodeSync(TaskEventSchema)(sample))) {
        assert.match(key, /^[a-z][a-z0-9_]*$/, `${sample.type}.${key}`)
      }
    }
  })

  it("rejects an unknown type and a wrong status", () => {
    assert.isTrue(Either.isLeft(Schema.decodeUnknownEither(TaskEventSchema)({ type: "mystery" })))
    assert.isTrue(
      Either.isLeft(Schema.decodeUnknownEither(TaskEventSchema)({ type: "tool_return", tool_call_id: "x", status: "ok", content: "", otid: "o" }))
    )
    assert.isTrue(Either.isLeft(Schema.decodeUnknownEither(TaskEventSchema)({ type: "text_delta", content: "x", seq: 0 })))
  })
})
