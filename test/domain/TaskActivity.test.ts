import { assert, describe, it } from "@effect/vitest"
import type { TaskEvent } from "../../src/domain/Events.js"
import { Otid, ToolCallId } from "../../src/domain/Ids.js"
import { awaitingNextRun, type TaskFacts, taskRunning } from "../../src/domain/TaskActivity.js"

const ctx = (item: TaskEvent) => ({ inContext: true, item })
const trace = (item: TaskEvent) => ({ inContext: false, item })
const user = (content: string) => ctx({ type: "user_message", content, otid: Otid.make(`u-${content}`) })
const said = (content: string) => ctx({ type: "assistant_message", content })
const call = (id: string) => ctx({ type: "tool_call", tool_call_id: ToolCallId.make(id), name: "Read", arguments: "{}" })
const result = (id: string, inContext = true) => ({
  inContext,
  item: { type: "tool_return", tool_call_id: ToolCallId.make(id), status: "success", content: "ok", otid: Otid.make(`r-${id}`) } satisfies TaskEvent
})
const allow = (id: string) => trace({ type: "approval_decision", tool_call_id: ToolCallId.make(id), decision: "allow", source: "user" })
const abort = trace({ type: "abort", reason: "interrupted by the user" })
const stop = trace({ type: "stop_reason", reason: "requires_approval" })

const idle: TaskFacts = { activeRun: undefined, pendingCalls: 0, heldSteering: 0, tail: [] }

describe("TaskActivity: whether a conversation has a task running", () => {
  it("a new conversation, and one whose task ended with an answer, are idle", () => {
    assert.isFalse(taskRunning(idle))
    assert.isFalse(taskRunning({ ...idle, tail: [user("q"), call("c1"), result("c1"), said("done"), stop] }))
  })

  it("an active turn runs a task; an active compaction alone does not", () => {
    assert.isTrue(taskRunning({ ...idle, activeRun: "turn" }))
    assert.isFalse(taskRunning({ ...idle, activeRun: "compaction", tail: [user("q"), said("a")] }))
    assert.isTrue(taskRunning({ ...idle, activeRun: "compaction", tail: [user("q"), call("c1"), result("c1")] }), "a compaction between two runs of a task")
  })

  it("calls waiting for results, and held steering, keep the task running between its runs", () => {
    assert.isTrue(taskRunning({ ...idle, pendingCalls: 1, tail: [user("q"), call("c1"), stop] }))
    assert.isTrue(taskRunning({ ...idle, heldSteering: 1, tail: [user("q"), said("a")] }), "a run ended while steering waited: the task continues with it")
  })

  it("all results in and the next run not sent yet: the task runs, whatever trace-only items follow the results", () => {
    assert.isTrue(awaitingNextRun([user("q"), call("c1"), call("c2"), stop, allow("c2"), result("c2"), allow("c1"), result("c1")]))
    assert.isTrue(awaitingNextRun([result("c1")]), "a tail that starts inside the batch")
    assert.isTrue(taskRunning({ ...idle, tail: [user("q"), call("c1"), result("c1"), trace({ type: "wait", reason: "busy", retry_in_ms: 1 })] }))
  })

  it("an interrupted task closed its calls with an abort: idle, whether or not a partial turn follows", () => {
    assert.isFalse(awaitingNextRun([user("q"), call("c1"), abort, result("c1")]))
    assert.isFalse(awaitingNextRun([user("q"), call("c1"), result("c1"), abort]), "calls answered before the interrupt")
    assert.isFalse(awaitingNextRun([user("q"), call("c1"), abort, result("c1"), user("[turn_aborted]…[/turn_aborted]")]))
  })

  it("an abort of an earlier task does not reach past the results of a later one", () => {
    assert.isTrue(awaitingNextRun([user("q"), call("c0"), abort, result("c0"), user("again"), call("c1"), result("c1")]))
  })

  it("results only in the trace (held for a streamed call) are not the context's last word", () => {
    assert.isFalse(awaitingNextRun([user("q"), said("a"), result("c9", false)]))
    assert.isFalse(awaitingNextRun([]))
  })
})
