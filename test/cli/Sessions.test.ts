import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cliDirs, jsonEvents, runCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { byType } from "../support/sessionHarness.js"

/** Conversations across processes: `--continue`, `--conversation`, `sessions list|show|export`. */

describe("baton sessions and continuing (built CLI)", () => {
  it.scopedLive("--continue picks this workspace's latest conversation; a compaction starts trace segment 2; export writes both", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const other = Path.join(dirs.root, "other")
      Fs.mkdirSync(other)
      // After one turn the next request compacts first: that is what makes a second trace segment.
      Fs.writeFileSync(Path.join(dirs.home, "settings.json"), JSON.stringify({ compaction: { maxSessionTurns: 1 } }))
      const server = yield* MockModelServer.make({
        replies: [
          Reply.text("First answer."),
          Reply.text("Elsewhere."),
          Reply.text("[summary]The user asked once; the answer was given.[/summary]"),
          Reply.text("Second answer.")
        ]
      })
      const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home }
      const first = yield* runCli(["run", "--json", "-w", dirs.workspace, "first question"], { env })
      assert.strictEqual(first.code, 0, first.stderr)
      const elsewhere = yield* runCli(["run", "--json", "-w", other, "unrelated"], { env })
      assert.strictEqual(elsewhere.code, 0, elsewhere.stderr)
      const conversations = (yield* runCli(["sessions", "list", "--json"], { env })).stdout.trim().split("\n")
        .map((line) => JSON.parse(line) as { readonly id: string; readonly workspace: string })
      assert.deepStrictEqual(conversations.map((c) => c.workspace), [other, dirs.workspace], "newest first")
      const id = conversations[1]!.id

      const second = yield* runCli(["run", "--continue", "-w", dirs.workspace, "second question"], { env })
      assert.strictEqual(second.code, 0, second.stderr)
      assert.strictEqual(second.stdout, "Second answer.\n")
      assert.include(second.stderr, `continuing conversation ${id}`)
      assert.include(second.stderr, "compacting the context (turns, summarize)")
      const requests = yield* server.requests
      assert.include(requests[3]!.body, "The user asked once", "the turn after the compaction starts from the summary")

      const listed = yield* runCli(["sessions", "list"], { env })
      assert.strictEqual(listed.code, 0)
      assert.match(listed.stdout.split("\n")[0]!, new RegExp(`^${id} .*first question.*${dirs.workspace.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`))

      const out = Path.join(dirs.root, "trace")
      const exported = yield* runCli(["sessions", "export", id!, "--out", out], { env })
      assert.strictEqual(exported.code, 0, exported.stderr)
      assert.deepStrictEqual(Fs.readdirSync(out).sort(), ["trace_001.jsonl", "trace_002.jsonl"])
      const one = jsonEvents(Fs.readFileSync(Path.join(out, "trace_001.jsonl"), "utf8"))
      const two = jsonEvents(Fs.readFileSync(Path.join(out, "trace_002.jsonl"), "utf8"))
      assert.deepStrictEqual(byType(one, "assistant_message").map((m) => m.content), ["First answer."])
      assert.deepStrictEqual(byType(two, "assistant_message").map((m) => m.content), ["Second answer."])

      const shown = yield* runCli(["sessions", "show", id!], { env })
      assert.include(shown.stdout, "› first question")
      assert.include(shown.stdout, "› second question")
      assert.include(shown.stdout, "The user asked once")
    }))

  it.scopedLive("an unknown --conversation or session id is a usage error (exit 2)", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const server = yield* MockModelServer.make()
      const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home }
      const run = yield* runCli(["run", "--conversation", "conv-nope", "-w", dirs.workspace, "hi"], { env })
      assert.strictEqual(run.code, 2)
      assert.include(run.stderr, "conv-nope")
      const show = yield* runCli(["sessions", "show", "conv-nope"], { env })
      assert.strictEqual(show.code, 2)
      assert.strictEqual((yield* server.requests).length, 0)
    }))
})
