import { assert, describe, it } from "@effect/vitest"
import type { TaskEvent } from "../../src/domain/Events.js"
import type { ToolCall } from "../../src/domain/Messages.js"
import type { ApprovalRequest } from "../../src/programs/session/ApprovalGate.js"
import { parseAnswer, questionLines } from "../../src/programs/cli/view/ApprovalView.js"
import { callHeader, type DiffLine, editDiff } from "../../src/domain/CallPreview.js"
import { initialView, type Piece, resultExcerpt, type ViewState, viewEvent } from "../../src/programs/cli/view/EventView.js"
import { exitCodeFor, stepOutcome, type Outcome } from "../../src/programs/cli/ExitCode.js"
import { describePhase, initialPhase, type Phase, stepPhase } from "../../src/programs/cli/view/Phase.js"
import { makeStyle } from "../../src/programs/cli/view/Style.js"

/** The pure parts of the terminal views: what a call, a diff, a phase and an event read like. */

const call = (name: string, args: unknown, id = "c1"): ToolCall =>
  ({ type: "tool_call", tool_call_id: id, name, arguments: JSON.stringify(args) }) as ToolCall

const show = (lines: ReadonlyArray<DiffLine>) =>
  lines.map((l) => (l._tag === "Note" ? `# ${l.text}` : `${l.line} ${l._tag === "Context" ? " " : l._tag === "Removed" ? "-" : "+"} ${l.text}`))

const FILE = ["one", "two", "three", "four", "five", "six"].join("\n") + "\n"

describe("CallPreview", () => {
  it("names what each tool touches", () => {
    assert.deepStrictEqual(callHeader(call("Bash", { command: "npm test" })), { tool: "Bash", subject: "npm test" })
    assert.deepStrictEqual(callHeader(call("Read", { file_path: "a.ts", offset: 10, limit: 5 })), { tool: "Read", subject: "a.ts (lines 10–14)" })
    assert.deepStrictEqual(callHeader(call("Grep", { pattern: "TODO", path: "src" })), { tool: "Grep", subject: "TODO in src" })
    assert.deepStrictEqual(callHeader(call("Bash", { command: "a\nb\nc" })).subject, "a … (+2 lines)")
    assert.deepStrictEqual(callHeader({ ...call("Edit", {}), arguments: "{not json" }).subject, "{not json")
  })

  it("an Edit in the middle of a file: context, the changed lines only, context", () => {
    const diff = editDiff(call("Edit", { file_path: "f", old_string: "three\nfour", new_string: "THREE\nfour\nfour-b" }), FILE)
    assert.deepStrictEqual(show(diff), ["1   one", "2   two", "3 - three", "3 + THREE", "4   four", "5 + four-b", "6   five", "7   six"])
  })

  it("an edit inside one line shows that line before and after; a deleted line shows only as removed", () => {
    assert.deepStrictEqual(show(editDiff(call("Edit", { file_path: "f", old_string: "ive", new_string: "IVE" }), FILE)), [
      "3   three", "4   four", "5 - five", "5 + fIVE", "6   six"
    ])
    assert.deepStrictEqual(show(editDiff(call("Edit", { file_path: "f", old_string: "two\n", new_string: "" }), FILE)), [
      "1   one", "2 - two", "2   three", "3   four"
    ])
  })

  it("an edit that cannot apply says why and shows the requested replacement", () => {
    const diff = show(editDiff(call("Edit", { file_path: "f", old_string: "seven", new_string: "7" }), FILE))
    assert.match(diff[0]!, /^# \(this edit will fail: old_string was not found/)
    assert.deepStrictEqual(diff.slice(1), ["1 - seven", "1 + 7"])
    assert.match(show(editDiff(call("Edit", { file_path: "f", old_string: "a", new_string: "b" }), undefined))[0]!, /cannot be read/)
  })

  it("replace_all notes the other replacements", () => {
    const diff = show(editDiff(call("Edit", { file_path: "f", old_string: "o", new_string: "0", replace_all: true }), "foo\nbar\nboo\n"))
    assert.strictEqual(diff.at(-1), "# (and 3 more replacements)")
  })
})

describe("ApprovalView", () => {
  it("only y, a or n (or the words) answer; nothing is a default", () => {
    assert.deepStrictEqual(["y", " Yes ", "a", "always", "n", "no", "deny"].map(parseAnswer), ["allow", "allow", "allow_always", "allow_always", "deny", "deny", "deny"])
    for (const stray of ["", " ", "\n", "ok", "sure", "yy", "y please", "1"]) assert.isUndefined(parseAnswer(stray), JSON.stringify(stray))
  })

  it("a subagent's question says whose call it is", () => {
    const request = {
      call: call("Bash", { command: "npm test" }, "k1"),
      classification: { verdict: "ask", source: "default" },
      grant: { text: "Bash(npm test:*)", tool: "Bash", specifier: "npm test:*" }
    } as const
    const origin = { conversation_id: "conv-child", tool_call_id: "t1", description: "run the tests" } as unknown as NonNullable<ApprovalRequest["origin"]>
    const own = questionLines(request, undefined, makeStyle(false)).join("\n")
    const child = questionLines({ ...request, origin }, undefined, makeStyle(false)).join("\n")
    assert.include(own, "? Allow Bash npm test")
    assert.include(child, "? subagent «run the tests» wants to run Bash npm test")
  })
})

describe("EventView of a subagent", () => {
  it("a Task call reads as its description (and type)", () => {
    assert.deepStrictEqual(callHeader(call("Task", { description: "find the bug", prompt: "long text", subagent_type: "reviewer" })), {
      tool: "Task",
      subject: "«find the bug» (reviewer)"
    })
  })


  it("a child's lines are indented under its Task call, its text never the answer", () => {
    const origin = { conversation_id: "conv-child", tool_call_id: "t1", description: "look" } as unknown as NonNullable<TaskEvent["origin"]>
    const pieces = view([
      call("Task", { description: "look", prompt: "p" }, "t1"),
      { type: "text_delta", content: "I will read", origin },
      { type: "assistant_message", content: "I will read", origin },
      { ...call("Read", { file_path: "a.txt" }, "k1"), origin }
    ] as ReadonlyArray<TaskEvent>)
    assert.isFalse(pieces.some((p) => p.sink === "text"), "no child text on the answer's stream")
    const notes = pieces.map((p) => p.text).join("")
    assert.include(notes, "↳ subagent «look» conv-child")
    assert.include(notes, "    │ I will read")
    assert.match(notes, /^ {4}│ .*a\.txt/m)
    const other = { ...origin, tool_call_id: "t2", description: "other" } as NonNullable<TaskEvent["origin"]>
    const two = view([
      { type: "assistant_message", content: "first", origin },
      { type: "assistant_message", content: "second", origin: other },
      { type: "assistant_message", content: "third", origin }
    ] as ReadonlyArray<TaskEvent>).map((p) => p.text).join("")
    assert.include(two, "    │ first")
    assert.include(two, "    │ «other» second", "with two children, each line says whose it is")
    assert.include(two, "    │ «look» third")
  })
})

const view = (events: ReadonlyArray<TaskEvent>, options = {}) => {
  let state: ViewState = initialView
  const pieces: Array<Piece> = []
  for (const event of events) {
    const [next, out] = viewEvent(state, event, { style: makeStyle(false), userDecisions: true, reasoning: true, prompts: false, ...options })
    state = next
    pieces.push(...out)
  }
  return pieces
}

describe("EventView", () => {
  it("text streams to the text sink; a call, its decision and its result are notes; out-of-order results are labelled", () => {
    const pieces = view([
      { type: "text_delta", content: "Looking" },
      { type: "assistant_message", content: "Looking" },
      call("Read", { file_path: "a.txt" }, "c1"),
      call("Bash", { command: "ls" }, "c2"),
      { type: "approval_decision", tool_call_id: "c2", decision: "allow", source: "rule", rule: "Bash(ls)" },
      { type: "tool_return", tool_call_id: "c2", status: "success", content: "x\ny", otid: "o" },
      { type: "tool_return", tool_call_id: "c1", status: "denied", content: "Tool call denied by user.", otid: "o" }
    ] as ReadonlyArray<TaskEvent>)
    assert.deepStrictEqual(pieces.filter((p) => p.sink === "text").map((p) => p.text), ["Looking", "\n"])
    assert.deepStrictEqual(pieces.filter((p) => p.sink === "note").map((p) => p.text), [
      "● Read a.txt\n",
      "● Bash ls\n",
      "  ✓ allowed by rule (Bash(ls))\n",
      "  ⎿ x\n    y\n",
      "  ⎿ Read a.txt: denied — Tool call denied by user.\n"
    ])
  })

  it("a compaction's summary is not the answer: its deltas stay out of the text sink", () => {
    const pieces = view([
      { type: "compaction_begin", reason: "manual", mode: "summarize" },
      { type: "text_delta", content: "[summary]s[/summary]" },
      { type: "compaction_end", status: "ok", segment: 2 },
      { type: "text_delta", content: "answer" }
    ] as ReadonlyArray<TaskEvent>)
    assert.deepStrictEqual(pieces.filter((p) => p.sink === "text").map((p) => p.text), ["answer"])
  })

  it("long results keep their first lines and their last one", () => {
    const lines = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`)
    assert.deepStrictEqual(resultExcerpt(lines.join("\n"), 6), ["line 1", "line 2", "line 3", "line 4", "line 5", "… 14 more lines", "line 20"])
    assert.deepStrictEqual(resultExcerpt(lines.slice(0, 7).join("\n"), 6), lines.slice(0, 7))
  })
})

describe("Phase", () => {
  const fold = (events: ReadonlyArray<TaskEvent>, now = 0): Phase => events.reduce((p, e) => stepPhase(p, e, now), initialPhase)

  it("follows the task: waiting, thinking, answering, running a tool, reconnecting", () => {
    assert.strictEqual(describePhase(fold([{ type: "request_begin", attempt: 0 }] as ReadonlyArray<TaskEvent>), 0), "waiting for the model")
    assert.strictEqual(describePhase(fold([{ type: "reasoning_delta", content: "h" }] as ReadonlyArray<TaskEvent>), 0), "thinking")
    assert.strictEqual(describePhase(fold([{ type: "text_delta", content: "h" }] as ReadonlyArray<TaskEvent>), 0), "answering")
    const running = fold([
      call("Bash", { command: "npm test" }),
      { type: "approval_decision", tool_call_id: "c1", decision: "allow", source: "user" },
      { type: "request_end", status: "ok", attempt: 0 }
    ] as ReadonlyArray<TaskEvent>)
    assert.strictEqual(describePhase(running, 0), "running Bash npm test")
    assert.strictEqual(describePhase(stepPhase(running, { type: "tool_return", tool_call_id: "c1", status: "success", content: "", otid: "o" } as TaskEvent, 0), 0), "waiting for the model")
    const retrying = fold([{ type: "request_end", status: "retrying", attempt: 0, retry_in_ms: 2000 }] as ReadonlyArray<TaskEvent>, 1000)
    assert.strictEqual(describePhase(retrying, 1500), "retrying in 1.5 s (attempt 1) · Enter retries now · Ctrl-C abandons")
    const busy = fold([{ type: "wait", reason: "busy", retry_in_ms: 10_000 }] as ReadonlyArray<TaskEvent>, 1000)
    assert.strictEqual(describePhase(busy, 4000), "the conversation is busy: retrying in 7.0 s · Enter retries now · Ctrl-C abandons")
  })

  it("a denied call never shows as running", () => {
    const denied = fold([call("Bash", { command: "rm -rf /" }), { type: "approval_decision", tool_call_id: "c1", decision: "deny", source: "rule" }] as ReadonlyArray<TaskEvent>)
    assert.strictEqual(denied.running.size, 0)
  })
})

describe("ExitCode", () => {
  it("the last stop reason decides; requires_approval is never the end; an abort is 130", () => {
    const outcome = (events: ReadonlyArray<TaskEvent>): Outcome => events.reduce(stepOutcome, undefined as Outcome)
    const stop = (reason: string) => ({ type: "stop_reason", reason }) as TaskEvent
    assert.strictEqual(exitCodeFor(outcome([stop("requires_approval"), stop("end_turn")])), 0)
    assert.strictEqual(exitCodeFor(outcome([stop("end_turn"), stop("requires_approval")])), 0)
    assert.deepStrictEqual(["error", "max_turns", "max_tokens", "auth", "cancelled"].map((r) => exitCodeFor(outcome([stop(r)]))), [1, 1, 1, 3, 130])
    assert.strictEqual(exitCodeFor(outcome([stop("requires_approval"), { type: "abort" } as TaskEvent])), 130)
    assert.strictEqual(exitCodeFor(undefined), 1)
    const fromChild = { ...stop("auth"), origin: { conversation_id: "conv-c", tool_call_id: "t1", description: "d" } } as TaskEvent
    assert.strictEqual(exitCodeFor(outcome([stop("requires_approval"), fromChild, stop("end_turn")])), 0, "a subagent's stop is not the task's")
    assert.strictEqual(exitCodeFor(outcome([stop("end_turn"), fromChild])), 0)
  })
})
