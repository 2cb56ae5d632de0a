import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import { editDiff, editDiffAfter } from "../../src/domain/CallPreview.js"
import type { ToolCall } from "../../src/domain/Messages.js"
import { applyEdit } from "../../src/domain/TextEdit.js"
import { numberedLine } from "../../src/services/tools/Read.js"

const FILE = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join("\n") + "\n"

const edit = (old_string: string, new_string: string): ToolCall => ({
  type: "tool_call",
  tool_call_id: "call_1" as ToolCall["tool_call_id"],
  name: "Edit",
  arguments: JSON.stringify({ file_path: "f.txt", old_string, new_string })
})

/** Edit's answer as the tool writes it: the new text around the change, numbered, three lines of context. */
const result = (call: ToolCall) => {
  const args = JSON.parse(call.arguments) as { old_string: string; new_string: string }
  const applied = Either.getOrThrow(applyEdit(FILE, args, "f.txt"))
  const lines = applied.content.replace(/\n$/, "").split("\n")
  const from = Math.max(1, applied.firstLine - 3)
  const to = Math.min(lines.length, applied.firstLine + applied.newLines - 1 + 3)
  return `Edited f.txt: 1 replacement. The result around line ${applied.firstLine}:\n` +
    lines.slice(from - 1, to).map((l, i) => numberedLine(from + i, l)).join("\n")
}

describe("CallPreview.editDiffAfter", () => {
  it("gives back, from an Edit's result, the diff the approval showed against the file before it", () => {
    for (const call of [edit("line 10", "line ten\nline ten and a half"), edit("line 2\nline 3", "two"), edit("line 19", "LINE 19")]) {
      const after = editDiffAfter(call, result(call))
      assert.deepStrictEqual(after, editDiff(call, FILE))
      assert.isTrue(after!.some((l) => l._tag === "Context" && l.line > 0), "with line numbers and context")
    }
  })

  it("is undefined when the result holds no numbered excerpt of the new text", () => {
    assert.isUndefined(editDiffAfter(edit("line 1", "x"), "Edit failed: old_string not found"))
    assert.isUndefined(editDiffAfter(edit("line 20", ""), result(edit("line 20", ""))))
  })
})
