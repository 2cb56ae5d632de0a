import { assert, describe, it } from "@effect/vitest"
import type { Chunk, TaskEvent } from "../../src/domain/Events.js"
import { RunId, ToolCallId } from "../../src/domain/Ids.js"
import { partial } from "../../src/domain/RunAssembler.js"
import { recordOf } from "../../src/programs/backend/RunRecord.js"

const runId = RunId.make("run-1")
const chunks = (events: ReadonlyArray<TaskEvent>): ReadonlyArray<Chunk> => events.map((e, i) => ({ ...e, run_id: runId, seq: i + 1 }) as Chunk)
const call = (id: string): TaskEvent => ({ type: "tool_call", tool_call_id: ToolCallId.make(id), name: "Read", arguments: "{}" })

describe("RunRecord.recordOf: a lost runner's run, rebuilt from its committed chunks", () => {
  it("an open request: its attempt, the calls a failed attempt carried, what it showed and the text still streaming", () => {
    const record = recordOf(chunks([
      { type: "request_begin", attempt: 0 },
      call("c1"),
      { type: "text_delta", content: "lost " },
      { type: "request_end", status: "retrying", attempt: 0, retry_in_ms: 250, error: { tag: "ProviderTimeout", message: "stall" } },
      { type: "turn_retried", attempt: 1, content: "…" },
      { type: "request_begin", attempt: 1 },
      { type: "text_delta", content: "Hel" },
      { type: "text_delta", content: "lo. " },
      { type: "assistant_message", content: "Hello. " },
      { type: "text_delta", content: "Still " },
      { type: "text_delta", content: "going" }
    ]))
    assert.deepStrictEqual([record.requests, record.inRequest, record.finished], [2, true, false])
    assert.deepStrictEqual(record.carried.map((c) => (c.type === "tool_call" ? String(c.tool_call_id) : c.type)), ["c1"])
    assert.deepStrictEqual(record.shown.map((c) => c.type), ["assistant_message"])
    // What `[turn_retried]` will carry: the complete text, then the text that was still streaming.
    assert.strictEqual(partial(record.assembly).text, "Hello. Still going")
  })

  it("between attempts no request is open, and the failed one's text waits for its [turn_retried]; a run that ended is finished", () => {
    const between = recordOf(chunks([
      { type: "request_begin", attempt: 0 },
      { type: "text_delta", content: "x" },
      { type: "request_end", status: "retrying", attempt: 0, retry_in_ms: 250, error: { tag: "ProviderTimeout", message: "stall" } }
    ]))
    assert.deepStrictEqual([between.requests, between.inRequest, partial(between.assembly).text], [1, false, "x"])
    const ended = recordOf(chunks([{ type: "request_begin", attempt: 0 }, { type: "request_end", status: "ok", attempt: 0 }, { type: "stop_reason", reason: "end_turn" }]))
    assert.isTrue(ended.finished)
  })
})
