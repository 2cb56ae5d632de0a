import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Approver } from "../../src/programs/session/ApprovalGate.js"
import { open } from "../../src/programs/session/Session.js"
import { Turn } from "../../src/services/provider/Scripted.js"
import { byType, sessionLayer, Workspace } from "../support/sessionHarness.js"
import { collect } from "../support/testing.js"

/**
 * What the model saw of files across a compaction: a file the summary names stays in view; any other
 * must be read again, and the Edit says why. Checked from a session opened afresh (a new process).
 */

const allow: Approver = () => Effect.succeed("allow")

const edit = (id: string, file: string) =>
  Turn.toolCalls([{ id, name: "Edit", args: { file_path: file, old_string: "v1", new_string: "v2" } }])

describe("what the model saw of files, across a compaction", () => {
  it.scopedLive("the summary keeps the files it names; the others need a new Read, saying why", () =>
    Effect.gen(function*() {
      const ws = yield* Workspace
      Fs.writeFileSync(Path.join(ws.dir, "named.txt"), "v1\n")
      Fs.writeFileSync(Path.join(ws.dir, "other.txt"), "v1\n")
      const first = yield* open({ approver: allow })
      yield* collect(first.run("read both"))
      yield* collect(first.compact)
      // A new session on the conversation: its view comes from the history alone.
      const again = yield* open({ conversationId: first.conversationId, approver: allow })
      const events = yield* collect(again.run("change both"))
      const returns = byType(events, "tool_return")
      assert.strictEqual(returns.find((r) => r.tool_call_id === "e1")?.status, "success")
      assert.strictEqual(Fs.readFileSync(Path.join(ws.dir, "named.txt"), "utf8"), "v2\n")
      const refused = returns.find((r) => r.tool_call_id === "e2")
      assert.strictEqual(refused?.status, "error")
      assert.include(refused?.content, "other.txt was read before the conversation was compacted, and the summary does not mention it")
      assert.strictEqual(Fs.readFileSync(Path.join(ws.dir, "other.txt"), "utf8"), "v1\n")
    }).pipe(Effect.provide(sessionLayer("sqlite", [
      Turn.toolCalls([{ id: "r1", name: "Read", args: { file_path: "named.txt" } }, { id: "r2", name: "Read", args: { file_path: "other.txt" } }]),
      Turn.text("read them"),
      Turn.text("[summary]The user asked to read named.txt and another file.[/summary]"),
      edit("e1", "named.txt"),
      edit("e2", "other.txt"),
      Turn.text("done")
    ]))))
})
