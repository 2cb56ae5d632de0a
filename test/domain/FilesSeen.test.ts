import { assert, describe, it } from "@effect/vitest"
import type { TaskEvent } from "../../src/domain/Events.js"
import { emptyView, observeAll, staleness } from "../../src/domain/FilesSeen.js"
import { ConversationId, Otid, ToolCallId } from "../../src/domain/Ids.js"

const shown = (id: string, files: Record<string, string>, status: "success" | "error" = "success"): TaskEvent => ({
  type: "tool_return",
  tool_call_id: ToolCallId.make(id),
  status,
  content: "…",
  otid: Otid.make(`o-${id}`),
  files: Object.fromEntries(Object.entries(files).map(([path, sha256]) => [path, { sha256 }]))
})

describe("FilesSeen: the view rebuilt from a conversation's items", () => {
  it("the latest result that showed a file wins; failed results and a subagent's results change nothing", () => {
    const view = observeAll(emptyView, [
      shown("1", { "a.ts": "h1" }),
      shown("2", { "a.ts": "h2" }),
      shown("3", { "b.ts": "x" }, "error"),
      { ...shown("4", { "c.ts": "y" }), origin: { conversation_id: ConversationId.make("conv-child"), tool_call_id: ToolCallId.make("t"), description: "d" } }
    ])
    assert.isUndefined(staleness(view, "a.ts", "h2"))
    assert.include(staleness(view, "a.ts", "h1"), "has changed on disk since it was last read")
    assert.include(staleness(view, "b.ts", "x"), "has not been read in this conversation yet")
    assert.include(staleness(view, "c.ts", "y"), "has not been read in this conversation yet")
  })

  it("a compaction keeps the files its summary names; the others need a new Read, which says why", () => {
    const view = observeAll(emptyView, [
      shown("1", { "src/a.ts": "ha", "src/b.ts": "hb" }),
      { type: "compaction_end", status: "ok", segment: 2 },
      { type: "summary_message", content: "We changed src/a.ts to export greet." }
    ])
    assert.isUndefined(staleness(view, "src/a.ts", "ha"))
    assert.include(staleness(view, "src/b.ts", "hb"), "read before the conversation was compacted, and the summary does not mention it")
    // Read again after the compaction: in view again.
    assert.isUndefined(staleness(observeAll(view, [shown("2", { "src/b.ts": "hb" })]), "src/b.ts", "hb"))
    // A failed compaction leaves the context, and the view, as they were.
    const failed = observeAll(emptyView, [shown("1", { "a.ts": "h" }), { type: "compaction_end", status: "failed", error: { tag: "X", message: "m" } }])
    assert.isUndefined(staleness(failed, "a.ts", "h"))
  })
})
