import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cliDirs, jsonEvents, runCli, startServe } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { assertOrdering, byType } from "../support/sessionHarness.js"

describe("baton serve and --server (built CLI)", () => {
  it.scopedLive("a client runs a tool task through a server; the server holds the conversation; SIGTERM stops it cleanly", () =>
    Effect.gen(function*() {
      const model = yield* MockModelServer.make({
        replies: [Reply.toolCalls([{ id: "call_1", name: "Read", args: { file_path: "a.txt" } }]), Reply.text("It says alpha.")]
      })
      const dirs = yield* cliDirs
      Fs.writeFileSync(Path.join(dirs.workspace, "a.txt"), "alpha\n")
      const serverHome = Path.join(dirs.root, "server-home")
      const server = yield* startServe(["--home", serverHome], model.childEnv("openai-chat"))
      // The client has no model configuration at all: the server makes the model calls.
      const client = { BATON_HOME: dirs.home }
      const result = yield* runCli(["run", "--json", "--approve", "allow", "--server", server.url, "-w", dirs.workspace, "what is in a.txt?"], { env: client })
      assert.strictEqual(result.code, 0, result.stderr)
      const events = jsonEvents(result.stdout)
      assertOrdering(events)
      const [returned] = byType(events, "tool_return")
      assert.deepStrictEqual([returned?.status, returned?.content.includes("alpha")], ["success", true])
      assert.strictEqual(byType(events, "assistant_message").at(-1)?.content, "It says alpha.")
      const listed = yield* runCli(["sessions", "list", "--json", "--server", server.url], { env: client })
      assert.strictEqual(listed.code, 0, listed.stderr)
      const conversations = listed.stdout.trim().split("\n").map((line) => JSON.parse(line) as { readonly id: string; readonly workspace?: string })
      assert.strictEqual(conversations.length, 1)
      assert.match(conversations[0]!.id, /^conv-/)
      assert.isTrue(Fs.existsSync(Path.join(serverHome, "baton.db")), "the conversation lives in the server's home")
      assert.isFalse(Fs.existsSync(Path.join(dirs.home, "baton.db")), "and not in the client's")
      yield* server.stop
      assert.strictEqual(yield* server.exited, 130)
    }))

  it.scopedLive("an unreachable server is a clear error; a public bind without a token refuses to start (exit 2)", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const unreachable = yield* runCli(["run", "--server", "http://127.0.0.1:1", "-w", dirs.workspace, "hi"], { env: { BATON_HOME: dirs.home } })
      assert.strictEqual(unreachable.code, 1)
      assert.include(unreachable.stderr, "cannot reach the Baton server at http://127.0.0.1:1")
      const open = yield* runCli(["serve", "--host", "0.0.0.0", "--home", dirs.home, "--model", "m", "--base-url", "http://127.0.0.1:9/v1"], { env: {} })
      assert.strictEqual(open.code, 2)
      assert.include(open.stderr, "without a token")
    }))
})
