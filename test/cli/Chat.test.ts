import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cliDirs, processGone } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { runInPty } from "../support/ptyProcess.js"
import { pidsWith, requireBwrap } from "../support/sandbox.js"

/** `baton chat` in a real pseudo-terminal: what a person at the keyboard sees and does. */

describe("baton chat (built CLI in a pseudo-terminal)", () => {
  it.scopedLive("a prompt, an approval answered 'allow always', Ctrl-C stops a long Bash and the chat stays, /exit leaves", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      Fs.writeFileSync(Path.join(dirs.workspace, "a.txt"), "alpha\n")
      const pidFile = Path.join(dirs.workspace, "bash.pid")
      const server = yield* MockModelServer.make({
        replies: [
          Reply.toolCalls([{ id: "call_1", name: "Read", args: { file_path: "a.txt" } }]),
          Reply.text("It says alpha."),
          Reply.toolCalls([
            { id: "call_2", name: "Read", args: { file_path: "a.txt" } },
            { id: "call_3", name: "Bash", args: { command: "echo $$ > bash.pid; sleep 60" } }
          ])
        ]
      })
      const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home, BATON_SANDBOX: "off" }
      const result = yield* runInPty(["chat", "--workspace", dirs.workspace], [
        { expect: "new conversation conv-" },
        { send: "what is in a.txt?\r" },
        { expect: "● Read a\\.txt" },
        { expect: "Allow Read a\\.txt\n +y once · a always in this session \\(adds Read\\) · n deny" },
        { send: "\r" },
        { expect: "type y, a or n" },
        { send: "a\r" },
        { expect: "✓ allowed for this session \\(Read\\)" },
        { expect: "It says alpha\\." },
        { send: "now read it again and run the slow command\r" },
        { expect: "✓ Read a\\.txt: allowed by this session's grant \\(Read\\)" },
        { expect: "Allow Bash echo \\$\\$ > bash\\.pid; sleep 60\n.*\\(adds Bash\\(echo \\$\\$ > bash\\.pid; sleep 60\\)\\)" },
        { send: "y\r" },
        { expect: "✓ allowed once" },
        { wait_file: pidFile },
        { expect_screen: "running Bash echo" },
        { send: "\u0003" },
        { expect: "interrupted" },
        { send: "/help\r" },
        { expect: "/compact" },
        { send: "/exit\r" },
        { wait_exit: true }
      ], env)
      if (process.env["SHOW_PTY"] !== undefined) console.log(result.transcript)
      assert.isTrue(result.ok, `${result.reason}\n${result.transcript}`)
      assert.strictEqual(result.exit_code, 0, result.transcript)
      // While the command runs: the status line, then the input line (typing there steers the task).
      const bottom = result.screens[0]!.split("\n").slice(-2)
      assert.match(bottom[0]!, /^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] running Bash echo \$\$ > bash\.pid; sleep 60 · \d+s · 10 in · 5 out · Ctrl-C interrupts$/)
      assert.strictEqual(bottom[1], "steer ›")
      const pid = Number(Fs.readFileSync(pidFile, "utf8").trim())
      assert.isTrue(processGone(pid), "the interrupted command's shell is gone")
      assert.strictEqual((yield* server.requests).length, 3, "nothing was sent to the model after the interrupt")
      assert.notInclude(result.transcript, "sk-mock-not-a-real-key")
    }))
})

describe.runIf(requireBwrap("test/cli/Chat.test.ts"))("baton chat with the sandbox on (built CLI in a pseudo-terminal)", () => {
  it.scopedLive("the header shows the mode; a sandboxed Bash runs without a question, as the first question said; Ctrl-C still ends all of it", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      Fs.writeFileSync(Path.join(dirs.workspace, "a.txt"), "alpha\n")
      const token = `chat${process.pid}${Date.now()}`
      const server = yield* MockModelServer.make({
        replies: [Reply.toolCalls([
          { id: "call_1", name: "Read", args: { file_path: "a.txt" } },
          { id: "call_2", name: "Bash", args: { command: `echo up > bash.up; exec -a ${token} sleep 60` } }
        ])]
      })
      const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home, BATON_SANDBOX: "workspace-write" }
      const result = yield* runInPty(["chat", "--workspace", dirs.workspace], [
        { expect: "sandbox workspace-write, no network" },
        { send: "read it and run the slow command\r" },
        { expect: "allowed without asking \\(Bash\\(sandboxed\\)\\)" },
        { expect: "Allow Read a\\.txt" },
        { send: "y\r" },
        { wait_file: Path.join(dirs.workspace, "bash.up") },
        { send: "\u0003" },
        { expect: "interrupted" },
        { send: "/exit\r" },
        { wait_exit: true }
      ], env)
      if (process.env["SHOW_PTY"] !== undefined) console.log(result.transcript)
      assert.isTrue(result.ok, `${result.reason}\n${result.transcript}`)
      assert.notInclude(result.transcript, "Allow Bash", "the sandboxed command was not asked")
      assert.deepStrictEqual(pidsWith(token), [], "the interrupted command is gone, all of it")
    }))
})

describe("baton chat: steering and leaving", () => {
  it.scopedLive("a line typed while a tool runs steers the task; Ctrl-C twice at the prompt leaves", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const started = Path.join(dirs.workspace, "started")
      const go = Path.join(dirs.workspace, "go")
      const server = yield* MockModelServer.make({
        replies: [
          Reply.toolCalls([{ id: "call_1", name: "Bash", args: { command: "echo 1 > started; while [ ! -f go ]; do sleep 0.05; done; echo finished" } }]),
          Reply.text("Hello as well!")
        ]
      })
      const env = { ...server.childEnv("anthropic"), BATON_HOME: dirs.home, BATON_SANDBOX: "off" }
      const result = yield* runInPty(["chat", "--workspace", dirs.workspace], [
        { expect: "new conversation" },
        { send: "wait for the go signal\r" },
        { expect: "Allow Bash" },
        { send: "y\r" },
        { wait_file: started },
        { send: "and then say hello\r" },
        { expect: "↳ steering: and then say hello" },
        { touch: go },
        { expect: "⎿ finished" },
        { expect: "Hello as well!" },
        { send: "\u0003" },
        { expect: "press Ctrl-C again to leave" },
        { send: "\u0003" },
        { wait_exit: true }
      ], env)
      if (process.env["SHOW_PTY"] !== undefined) console.log(result.transcript)
      assert.isTrue(result.ok, `${result.reason}\n${result.transcript}`)
      assert.strictEqual(result.exit_code, 0)
      const second = (yield* server.requests)[1]!.body
      assert.include(second, "[user_steering]")
      assert.include(second, "and then say hello")
      assert.include(second, "finished")
    }))
})

describe("prompts on a terminal outside chat", () => {
  it.scopedLive("run --approve ask on a terminal asks; Enter alone does not answer; y allows once", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      Fs.writeFileSync(Path.join(dirs.workspace, "a.txt"), "alpha\n")
      const server = yield* MockModelServer.make({
        replies: [Reply.toolCalls([{ id: "call_1", name: "Read", args: { file_path: "a.txt" } }]), Reply.text("It says alpha.")]
      })
      const env = { ...server.childEnv("openai-responses"), BATON_HOME: dirs.home }
      const result = yield* runInPty(["run", "--approve", "ask", "--workspace", dirs.workspace, "what is in a.txt?"], [
        { expect: "Allow Read a\\.txt" },
        { expect: "answer \\(y/a/n\\) ›" },
        { send: "\r" },
        { expect: "type y, a or n" },
        { send: "y\r" },
        { expect: "✓ allowed once" },
        { expect: "It says alpha\\." },
        { wait_exit: true }
      ], env)
      assert.isTrue(result.ok, `${result.reason}\n${result.transcript}`)
      assert.strictEqual(result.exit_code, 0)
      assert.include((yield* server.requests)[1]!.body, "alpha")
    }))

  it.scopedLive("chat --continue shows where the conversation left off", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const server = yield* MockModelServer.make({ replies: [Reply.text("The first answer.")] })
      const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home }
      const first = yield* runInPty(["chat", "-w", dirs.workspace], [
        { expect: "new conversation" },
        { send: "the first question\r" },
        { expect: "The first answer\\." },
        { send: "/exit\r" },
        { wait_exit: true }
      ], env)
      assert.isTrue(first.ok, `${first.reason}\n${first.transcript}`)
      const again = yield* runInPty(["chat", "--continue", "-w", dirs.workspace], [
        { expect: "continuing conversation conv-" },
        { expect: "› the first question\nThe first answer\\." },
        { send: "\u0004" },
        { wait_exit: true }
      ], env)
      assert.isTrue(again.ok, `${again.reason}\n${again.transcript}`)
      assert.strictEqual(again.exit_code, 0)
    }))
})

describe("baton chat: visible, skippable waits", () => {
  it.scopedLive("a reconnect shows a live countdown; Enter makes the next request happen long before it ends", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const server = yield* MockModelServer.make({
        replies: [Reply.status(429, { headers: { "retry-after": "20" } }), Reply.text("Back again.")]
      })
      const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home }
      const result = yield* runInPty(["chat", "-w", dirs.workspace], [
        { expect: "new conversation" },
        { send: "hello\r" },
        { expect: "retrying in 20\\.0 s" },
        { expect_screen: "retrying in 1\\d\\.\\d s \\(attempt 1\\) · Enter retries now · Ctrl-C abandons" },
        { send: "\r" },
        { expect: "Back again\\." },
        { send: "/exit\r" },
        { wait_exit: true }
      ], env)
      assert.isTrue(result.ok, `${result.reason}\n${result.transcript}`)
      const [first, second] = yield* server.requests
      const waited = second!.receivedAt - first!.endedAt()!
      assert.isBelow(waited, 10_000, `the retry came ${waited} ms after the failure, not after the 20 s wait`)
    }))
})
