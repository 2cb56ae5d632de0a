import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { decodeEventJson, encodeEventJson } from "../../src/domain/EventJson.js"
import { type TaskEvent, TaskEventFromJson } from "../../src/domain/Events.js"
import { Otid, RunId, ToolCallId } from "../../src/domain/Ids.js"

const run_id = RunId.make("run-1")
const id = ToolCallId.make("call_1")

const schemaEncode = Schema.encodeSync(TaskEventFromJson)
const schemaDecode = Schema.decodeUnknownEither(TaskEventFromJson)

const events: ReadonlyArray<TaskEvent> = [
  { type: "text_delta", content: "h\"é\n\u2028😀", run_id, seq: 4 },
  { type: "text_delta", content: "" },
  { type: "reasoning_delta", content: "t", run_id, seq: 2 },
  { type: "reasoning_delta", content: "no seq", run_id },
  { type: "tool_call_delta", tool_call_id: id, name: "Read", arguments: "{\"file", run_id, seq: 5 },
  { type: "tool_call_delta", tool_call_id: ToolCallId.make(" spaced id "), name: "", arguments: "" },
  { type: "user_message", content: "hello", otid: Otid.make("o-1") },
  { type: "stop_reason", reason: "end_turn", run_id, seq: 9 }
]

describe("EventJson", () => {
  it("writes exactly the schema's bytes, deltas and the rest alike", () => {
    for (const event of events) assert.strictEqual(encodeEventJson(event), schemaEncode(event))
  })

  it("reads exactly the schema's values, with unknown fields dropped as the schema drops them", () => {
    const texts = [
      ...events.map((event) => schemaEncode(event)),
      `{"seq":3,"content":"x","type":"text_delta","extra":true,"run_id":"run-2"}`,
      `{"type":"tool_call_delta","arguments":"{}","name":"Bash","tool_call_id":"c","seq":1,"more":[1]}`
    ]
    for (const text of texts) assert.deepStrictEqual(decodeEventJson(text), schemaDecode(text))
  })

  it("leaves every delta the schema would refuse to the schema, so it fails there with the schema's error", () => {
    const invalid = [
      `{"type":"text_delta","content":1}`,
      `{"type":"text_delta","content":"x","seq":0}`,
      `{"type":"text_delta","content":"x","seq":1.5}`,
      `{"type":"text_delta","content":"x","seq":"1"}`,
      `{"type":"text_delta","content":"x","run_id":" run"}`,
      `{"type":"text_delta","content":"x","run_id":""}`,
      `{"type":"text_delta","content":"x","run_id":null}`,
      `{"type":"tool_call_delta","tool_call_id":"","name":"a","arguments":""}`,
      `{"type":"tool_call_delta","tool_call_id":"c","arguments":""}`,
      `{"type":"nope"}`,
      `[1]`,
      `not json`
    ]
    for (const text of invalid) {
      const decoded = decodeEventJson(text)
      assert.isTrue(Either.isLeft(decoded), text)
      assert.isTrue(Either.isLeft(schemaDecode(text)), text)
    }
  })
})
