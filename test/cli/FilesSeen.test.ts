import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cliDirs, jsonEvents, runCli, startServe } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { runInPty } from "../support/ptyProcess.js"
import { byType } from "../support/sessionHarness.js"

/**
 * What the model saw of a file belongs to its conversation, not to the process that showed it: an
 * Edit approved in another process (a `run --continue`, a second client of a server, a relaunch
 * after a crash, a fork) applies, while a file changed on disk since is still refused, and another
 * conversation of the same workspace has a view of its own.
 */

const ORIGINAL = "export const greet = (name) => 'Hello ' + name\n"
const EDITED = "export const greet = (name) => `Hello, ${name}!`\n"

const read = Reply.toolCalls([{ id: "call_read", name: "Read", args: { file_path: "greet.js" } }])
const edit = (id: string) =>
  Reply.toolCalls([{ id, name: "Edit", args: { file_path: "greet.js", old_string: ORIGINAL.trimEnd(), new_string: EDITED.trimEnd() } }])

const setup = (replies: ReadonlyArray<Reply>) =>
  Effect.gen(function*() {
    const dirs = yield* cliDirs
    const file = Path.join(dirs.workspace, "greet.js")
    Fs.writeFileSync(file, ORIGINAL)
    const model = yield* MockModelServer.make({ replies })
    return { dirs, file, model, env: { ...model.childEnv("openai-chat"), BATON_HOME: dirs.home } }
  })

const editReturn = (stdout: string) => byType(jsonEvents(stdout), "tool_return").find((r) => r.tool_call_id === "call_edit")

describe("what the model saw of files outlives the process", () => {
  it.scopedLive("baton run reads, baton run -c edits: the edit applies; a file changed on disk since is refused", () =>
    Effect.gen(function*() {
      const { dirs, env, file } = yield* setup([read, Reply.text("It greets."), edit("call_edit"), Reply.text("Done."), edit("call_edit2"), Reply.text("Refused.")])
      const ws = ["-w", dirs.workspace]
      const first = yield* runCli(["run", "--json", "--approve", "allow", ...ws, "what does greet.js do?"], { env })
      assert.strictEqual(first.code, 0, first.stderr)
      const second = yield* runCli(["run", "-c", "--json", "--approve", "allow", ...ws, "now make it friendlier"], { env })
      assert.strictEqual(second.code, 0, second.stderr)
      assert.strictEqual(editReturn(second.stdout)?.status, "success", second.stdout)
      assert.strictEqual(Fs.readFileSync(file, "utf8"), EDITED)
      // The user changes the file; the model's next Edit (from what it saw) must not overwrite that.
      Fs.writeFileSync(file, "// mine now\n" + EDITED)
      const third = yield* runCli(["run", "-c", "--json", "--approve", "allow", ...ws, "once more"], { env })
      assert.strictEqual(third.code, 0, third.stderr)
      const refused = byType(jsonEvents(third.stdout), "tool_return").find((r) => r.tool_call_id === "call_edit2")
      assert.strictEqual(refused?.status, "error")
      assert.include(refused?.content, "greet.js has changed on disk since it was last read")
      assert.strictEqual(Fs.readFileSync(file, "utf8"), "// mine now\n" + EDITED)
    }))

  it.scopedLive("over --server, a second client process continues the conversation and its Edit applies", () =>
    Effect.gen(function*() {
      const { dirs, file, model } = yield* setup([read, Reply.text("It greets."), edit("call_edit"), Reply.text("Done.")])
      const server = yield* startServe(["--home", Path.join(dirs.root, "server-home")], model.childEnv("openai-chat"))
      const client = { BATON_HOME: dirs.home }
      const ws = ["--server", server.url, "-w", dirs.workspace]
      const first = yield* runCli(["run", "--json", "--approve", "allow", ...ws, "what does greet.js do?"], { env: client })
      assert.strictEqual(first.code, 0, first.stderr)
      const second = yield* runCli(["run", "-c", "--json", "--approve", "allow", ...ws, "now make it friendlier"], { env: client })
      assert.strictEqual(second.code, 0, second.stderr)
      assert.strictEqual(editReturn(second.stdout)?.status, "success", second.stdout)
      assert.strictEqual(Fs.readFileSync(file, "utf8"), EDITED)
    }))

  it.scopedLive("a fork inherits what its context saw; another conversation of the workspace keeps its own view", () =>
    Effect.gen(function*() {
      const { dirs, env, file } = yield* setup([read, Reply.text("It greets."), edit("call_edit"), Reply.text("Not mine."), edit("call_edit"), Reply.text("Done.")])
      const ws = ["-w", dirs.workspace]
      const first = yield* runCli(["run", "--json", "--approve", "allow", ...ws, "what does greet.js do?"], { env })
      assert.strictEqual(first.code, 0, first.stderr)
      const listed = yield* runCli(["sessions", "list", "--json"], { env })
      const source = (JSON.parse(listed.stdout.trim().split("\n")[0]!) as { readonly id: string }).id
      // A new conversation in the same workspace never read the file: its Edit is refused.
      const other = yield* runCli(["run", "--json", "--approve", "allow", ...ws, "make greet.js friendlier"], { env })
      assert.strictEqual(other.code, 0, other.stderr)
      const refused = editReturn(other.stdout)
      assert.strictEqual(refused?.status, "error")
      assert.include(refused?.content, "greet.js exists but has not been read in this conversation yet")
      assert.strictEqual(Fs.readFileSync(file, "utf8"), ORIGINAL)
      const forked = yield* runCli(["sessions", "fork", source, "--json"], { env })
      assert.strictEqual(forked.code, 0, forked.stderr)
      const fork = (JSON.parse(forked.stdout) as { readonly id: string }).id
      const inFork = yield* runCli(["run", "--conversation", fork, "--json", "--approve", "allow", ...ws, "make it friendlier"], { env })
      assert.strictEqual(inFork.code, 0, inFork.stderr)
      assert.strictEqual(editReturn(inFork.stdout)?.status, "success", inFork.stdout)
      assert.strictEqual(Fs.readFileSync(file, "utf8"), EDITED)
    }))

  it.scopedLive("chat killed at the Edit's question: chat --continue, y, and the file is edited", () =>
    Effect.gen(function*() {
      const { dirs, env, file } = yield* setup([read, edit("call_edit"), Reply.text("Made it friendlier.")])
      const first = yield* runInPty(["chat", "-w", dirs.workspace], [
        { expect: "new conversation" },
        { send: "make greet.js friendlier\r" },
        { expect: "Allow Read greet\\.js" },
        { send: "y\r" },
        { expect: "Allow Edit greet\\.js" },
        { kill: true }
      ], env)
      assert.isTrue(first.ok, `${first.reason}\n${first.transcript}`)
      assert.strictEqual(Fs.readFileSync(file, "utf8"), ORIGINAL)
      const second = yield* runInPty(["chat", "--continue", "-w", dirs.workspace], [
        { expect: "continuing conversation" },
        { expect: "Allow Edit greet\\.js" },
        { send: "y\r" },
        { expect: "Made it friendlier\\." },
        { send: "/exit\r" },
        { wait_exit: true }
      ], env)
      assert.isTrue(second.ok, `${second.reason}\n${second.transcript}`)
      assert.strictEqual(second.exit_code, 0, second.transcript)
      assert.strictEqual(Fs.readFileSync(file, "utf8"), EDITED, second.transcript)
    }))
})
