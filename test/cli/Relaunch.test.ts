import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cliDirs, type CliDirs, jsonEvents, runCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { runInPty } from "../support/ptyProcess.js"
import { byType } from "../support/sessionHarness.js"

/**
 * A process killed at an approval question: the calls it left waiting come back on relaunch
 * (Letta seed §1.3, §7.4), asked at once in chat, resumed by `run --continue` without a prompt.
 */

const setup = (...after: ReadonlyArray<Reply>) =>
  Effect.gen(function*() {
    const dirs = yield* cliDirs
    Fs.writeFileSync(Path.join(dirs.workspace, "math.js"), "export const add = (a, b) => a + b\n")
    const server = yield* MockModelServer.make({
      replies: [Reply.toolCalls([{ id: "call_1", name: "Read", args: { file_path: "math.js" } }]), ...after]
    })
    return { dirs, server, env: { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home } }
  })

/** `baton run --approve ask` on a terminal, SIGKILLed while it asks about the Read. */
const crashAtQuestion = (dirs: CliDirs, env: Record<string, string>) =>
  Effect.gen(function*() {
    const crashed = yield* runInPty(["run", "--approve", "ask", "-w", dirs.workspace, "what does math.js do?"], [
      { expect: "Allow Read math\\.js" },
      { kill: true }
    ], env)
    assert.isTrue(crashed.ok, `${crashed.reason}\n${crashed.transcript}`)
  })

describe("pending approvals come back on relaunch", () => {
  it.scopedLive("chat --continue asks the left-over question before any input; answering it finishes the task", () =>
    Effect.gen(function*() {
      const { dirs, env, server } = yield* setup(Reply.text("It adds two numbers."))
      const first = yield* runInPty(["chat", "-w", dirs.workspace], [
        { expect: "new conversation" },
        { send: "what does math.js do?\r" },
        { expect: "Allow Read math\\.js" },
        { kill: true }
      ], env)
      assert.isTrue(first.ok, `${first.reason}\n${first.transcript}`)
      const second = yield* runInPty(["chat", "--continue", "-w", dirs.workspace], [
        { expect: "continuing conversation" },
        // Nothing typed yet: the question is on the screen by itself.
        { expect: "● Read math\\.js" },
        { expect: "Allow Read math\\.js" },
        { send: "y\r" },
        { expect: "✓ allowed once" },
        { expect: "It adds two numbers\\." },
        { send: "/exit\r" },
        { wait_exit: true }
      ], env)
      assert.isTrue(second.ok, `${second.reason}\n${second.transcript}`)
      assert.strictEqual(second.exit_code, 0, second.transcript)
      const requests = yield* server.requests
      assert.strictEqual(requests.length, 2)
      const body = JSON.parse(requests[1]!.body) as { messages: ReadonlyArray<{ role: string; content: unknown }> }
      assert.include(requests[1]!.body, "a + b", "the model got the file the resumed call read")
      assert.deepStrictEqual(body.messages.filter((m) => m.role === "user").length, 1, "no new prompt was added")
    }))

  it.scopedLive("run --continue with no prompt resumes the waiting call and finishes the task", () =>
    Effect.gen(function*() {
      const { dirs, env, server } = yield* setup(Reply.text("It adds two numbers."))
      yield* crashAtQuestion(dirs, env)
      const result = yield* runCli(["run", "--continue", "--json", "--approve", "allow", "-w", dirs.workspace], { env })
      assert.strictEqual(result.code, 0, result.stderr)
      const events = jsonEvents(result.stdout)
      assert.deepStrictEqual(byType(events, "tool_call").map((c) => c.tool_call_id), ["call_1"])
      assert.strictEqual(byType(events, "tool_return")[0]?.status, "success")
      assert.deepStrictEqual(byType(events, "user_message"), [], "no prompt was sent")
      assert.strictEqual(events.at(-1)?.type, "stop_reason")
      assert.include((yield* server.requests)[1]!.body, "a + b")
    }))

  it.scopedLive("run --continue --approve ask on a non-TTY denies the left-over call and says which and why", () =>
    Effect.gen(function*() {
      const { dirs, env, server } = yield* setup(Reply.text("I was not allowed."))
      yield* crashAtQuestion(dirs, env)
      const result = yield* runCli(["run", "--continue", "--approve", "ask", "-w", dirs.workspace], { env })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.match(result.stderr, /the call left waiting by an earlier process, Read \(call_1\), was denied: stdin is not a terminal/)
      assert.include((yield* server.requests)[1]!.body, "denied")
    }))

  it.scopedLive("run without a prompt: exit 2 unless continuing, and exit 2 when nothing is waiting", () =>
    Effect.gen(function*() {
      const { dirs, env } = yield* setup(Reply.text("unused"))
      const bare = yield* runCli(["run", "-w", dirs.workspace], { env })
      assert.strictEqual(bare.code, 2, bare.stderr)
      assert.include(bare.stderr, "a prompt is needed")
      const done = yield* runCli(["run", "--approve", "allow", "-w", dirs.workspace, "read math.js"], { env })
      assert.strictEqual(done.code, 0, done.stderr)
      const nothing = yield* runCli(["run", "--continue", "-w", dirs.workspace], { env })
      assert.strictEqual(nothing.code, 2, nothing.stderr)
      assert.include(nothing.stderr, "nothing is waiting")
    }))
})
