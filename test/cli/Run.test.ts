import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { TaskEvent } from "../../src/domain/Events.js"
import { awaitFileText } from "../support/Processes.js"
import { cliDirs, jsonEvents, runCli, startCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { runInPty } from "../support/ptyProcess.js"
import { pidsWith, requireBwrap } from "../support/sandbox.js"
import { assertOrdering, byType } from "../support/sessionHarness.js"
import { eventually } from "../support/testing.js"

/** `baton run` as a child process against the loopback model server: the --json contract and exit codes. */

const nonDelta = (events: ReadonlyArray<TaskEvent>) => events.filter((e) => !e.type.endsWith("_delta")).map((e) => e.type)
const modelChunks = (events: ReadonlyArray<TaskEvent>) => nonDelta(events.filter((e) => e.run_id !== undefined))
const clientEvents = (events: ReadonlyArray<TaskEvent>) => nonDelta(events.filter((e) => e.run_id === undefined))

const setup = (...replies: ReadonlyArray<Reply>) =>
  Effect.gen(function*() {
    const server = yield* MockModelServer.make({ replies })
    const dirs = yield* cliDirs
    Fs.writeFileSync(Path.join(dirs.workspace, "a.txt"), "alpha\n")
    const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home }
    return { server, dirs, env, ws: ["--workspace", dirs.workspace] }
  })

const readCall = () => Reply.toolCalls([{ id: "call_1", name: "Read", args: { file_path: "a.txt" } }])

const TOOL_TASK = [
  "request_begin", "tool_call", "token_usage", "request_end", "stop_reason",
  "request_begin", "assistant_message", "token_usage", "request_end", "stop_reason"
]

describe("baton run (built CLI, loopback model)", () => {
  it.scopedLive("--json --approve allow: the tool runs; every stdout line is one task event; exit 0", () =>
    Effect.gen(function*() {
      const { env, server, ws } = yield* setup(readCall(), Reply.text("It says alpha."))
      const result = yield* runCli(["run", "--json", "--approve", "allow", ...ws, "what is in a.txt?"], { env })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.strictEqual(result.stderr, "", "--json prints nothing else")
      const events = jsonEvents(result.stdout)
      assertOrdering(events)
      assert.deepStrictEqual(modelChunks(events), TOOL_TASK)
      assert.deepStrictEqual(clientEvents(events), ["user_message", "approval_decision", "tool_return"])
      const [decision] = byType(events, "approval_decision")
      assert.deepStrictEqual([decision?.tool_call_id, decision?.decision], ["call_1", "allow"])
      const [returned] = byType(events, "tool_return")
      assert.strictEqual(returned?.status, "success")
      assert.include(returned?.content, "alpha")
      assert.deepStrictEqual(events.at(-1), { ...events.at(-1)!, type: "stop_reason", reason: "end_turn" })
      assert.strictEqual(byType(events, "text_delta").map((e) => e.content).join(""), "It says alpha.")
      assert.include((yield* server.requests)[1]!.body, "alpha", "the model saw the file's content")
    }))

  it.scopedLive("--json --approve deny: the call is denied, the model hears the denial, the task still ends", () =>
    Effect.gen(function*() {
      const { env, server, ws } = yield* setup(readCall(), Reply.text("I may not read it."))
      const result = yield* runCli(["run", "--json", "--approve", "deny", ...ws, "-"], { env, input: "what is in a.txt?" })
      assert.strictEqual(result.code, 0, result.stderr)
      const events = jsonEvents(result.stdout)
      assertOrdering(events)
      assert.deepStrictEqual(modelChunks(events), TOOL_TASK)
      assert.deepStrictEqual(byType(events, "user_message").map((m) => m.content), ["what is in a.txt?"], "`-` reads the prompt from stdin")
      const [decision] = byType(events, "approval_decision")
      assert.strictEqual(decision?.decision, "deny")
      const [returned] = byType(events, "tool_return")
      assert.deepStrictEqual([returned?.status, returned?.content], ["denied", "Tool call denied by user."])
      const second = (yield* server.requests)[1]!.body
      assert.include(second, "Tool call denied by user.")
      assert.notInclude(second, "alpha", "a denied Read never ran")
    }))

  it.scopedLive("--approve allow never overrides a deny rule; --max-turns stops the task with exit 1", () =>
    Effect.gen(function*() {
      const { dirs, env, ws } = yield* setup(readCall(), Reply.text("Denied."), readCall())
      Fs.mkdirSync(Path.join(dirs.workspace, ".baton"))
      Fs.writeFileSync(Path.join(dirs.workspace, ".baton", "settings.json"), JSON.stringify({ permissions: { deny: ["Read(a.txt)"] } }))
      const denied = yield* runCli(["run", "--json", "--approve", "allow", ...ws, "read it"], { env })
      assert.strictEqual(denied.code, 0, denied.stderr)
      assert.deepStrictEqual(byType(jsonEvents(denied.stdout), "approval_decision").map((d) => [d.decision, d.source, d.rule]), [["deny", "rule", "Read(a.txt)"]])
      Fs.rmSync(Path.join(dirs.workspace, ".baton"), { recursive: true })
      const limited = yield* runCli(["run", "--json", "--approve", "allow", "--max-turns", "1", ...ws, "read it"], { env })
      assert.strictEqual(limited.code, 1)
      assert.deepStrictEqual(byType(jsonEvents(limited.stdout), "stop_reason").map((e) => e.reason), ["requires_approval", "max_turns"])
    }))

  it.scopedLive("a 503 then success: request_end{retrying, retry_in_ms} on the stream, then the answer", () =>
    Effect.gen(function*() {
      const { env, ws } = yield* setup(Reply.status(503), Reply.text("Back again."))
      const result = yield* runCli(["run", "--json", ...ws, "hello"], { env })
      assert.strictEqual(result.code, 0, result.stderr)
      const events = jsonEvents(result.stdout)
      const ends = byType(events, "request_end")
      assert.deepStrictEqual(ends.map((e) => [e.status, e.attempt, e.retry_in_ms]), [["retrying", 0, 250], ["ok", 1, undefined]])
      assert.strictEqual(ends[0]?.error?.tag, "ProviderServerError")
      assert.deepStrictEqual(byType(events, "request_begin").map((e) => e.attempt), [0, 1])
      assert.deepStrictEqual(byType(events, "assistant_message").map((e) => e.content), ["Back again."])
    }))

  it.scopedLive("text mode: the answer on stdout, the retry and the tool call on stderr", () =>
    Effect.gen(function*() {
      const { env, ws } = yield* setup(Reply.status(503), readCall(), Reply.text("It says alpha."))
      const result = yield* runCli(["run", "--approve", "allow", ...ws, "what is in a.txt?"], { env })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.strictEqual(result.stdout, "It says alpha.\n")
      assert.match(result.stderr, /retrying in 250 ms/)
      assert.match(result.stderr, /● Read a\.txt\n {2}✓ allowed \(--approve allow\)\n {2}⎿ read 1 line/)
      assert.match(result.stderr, /conversation conv-/)
    }))

  it.scopedLive("401: stop_reason auth and exit code 3", () =>
    Effect.gen(function*() {
      const { env, server, ws } = yield* setup(Reply.status(401))
      const result = yield* runCli(["run", "--json", ...ws, "hello"], { env })
      assert.strictEqual(result.code, 3)
      const events = jsonEvents(result.stdout)
      assert.deepStrictEqual(byType(events, "stop_reason").map((e) => e.reason), ["auth"])
      assert.strictEqual((yield* server.requests).length, 1, "authentication is never retried")
      assert.notInclude(result.stdout + result.stderr, "sk-mock-not-a-real-key", "the key is never printed")
    }))

  it.scopedLive("stdin not a terminal + --approve ask: the call is denied, even when stdin says y", () =>
    Effect.gen(function*() {
      const { env, ws } = yield* setup(readCall(), Reply.text("Denied, then."))
      const result = yield* runCli(["run", "--json", "--approve", "ask", ...ws, "what is in a.txt?"], { env, input: "y\ny\na\nyes\n" })
      assert.strictEqual(result.code, 0, result.stderr)
      const events = jsonEvents(result.stdout)
      assert.deepStrictEqual(byType(events, "approval_decision").map((e) => [e.decision, e.source]), [["deny", "default"]])
      assert.deepStrictEqual(byType(events, "tool_return").map((e) => e.status), ["denied"])
      const text = yield* runCli(["run", "--approve", "ask", ...ws, "again"], { env, input: "y\n" })
      assert.include(text.stderr, "stdin is not a terminal")
    }))

  it.scopedLive("an invalid settings file: exit 2, naming the file, the field and what was expected", () =>
    Effect.gen(function*() {
      const { dirs, env, server, ws } = yield* setup()
      const file = Path.join(dirs.workspace, ".baton", "settings.json")
      Fs.mkdirSync(Path.dirname(file))
      Fs.writeFileSync(file, JSON.stringify({ permissions: { allow: ["Read"], alow: ["Bash"] }, maxTurns: 0 }))
      const result = yield* runCli(["run", ...ws, "hello"], { env })
      assert.strictEqual(result.code, 2)
      assert.include(result.stderr, file)
      assert.include(result.stderr, "permissions.alow: unknown key")
      assert.include(result.stderr, "maxTurns: expected a positive number, got 0")
      assert.notInclude(result.stderr, "    at ", "no stack trace")
      assert.strictEqual((yield* server.requests).length, 0)
      Fs.writeFileSync(Path.join(dirs.home, "settings.json"), "{ \"model\": 5")
      Fs.rmSync(file)
      const broken = yield* runCli(["run", ...ws, "hello"], { env })
      assert.strictEqual(broken.code, 2)
      assert.include(broken.stderr, `${Path.join(dirs.home, "settings.json")} is not valid JSON`)
    }))

  it.scopedLive("no model configured: exit 2, naming the variables and pointing at baton demo", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const result = yield* runCli(["run", "--workspace", dirs.workspace, "hello"], { env: { BATON_HOME: dirs.home } })
      assert.strictEqual(result.code, 2)
      for (const name of ["BATON_MODEL", "BATON_API_KEY", "BATON_PROVIDER", "baton demo"]) assert.include(result.stderr, name)
      const usage = yield* runCli(["run", "--approve", "maybe", "x"], { env: { BATON_HOME: dirs.home } })
      assert.strictEqual(usage.code, 2, "a bad option value is a usage error")
      const sandbox = yield* runCli(["run", "--sandbox", "strict", "x"], { env: { BATON_HOME: dirs.home } })
      assert.strictEqual(sandbox.code, 2, "a bad sandbox mode is a usage error")
      for (const mode of ["workspace-write", "read-only", "off"]) assert.include(sandbox.stderr, mode)
      const nowhere = yield* runCli(["run", "--workspace", Path.join(dirs.root, "missing"), "x"], { env: { BATON_HOME: dirs.home } })
      assert.strictEqual(nowhere.code, 2)
      assert.include(nowhere.stderr, "is not a usable directory")
    }))
})

/**
 * Ctrl-C and a crash, with the sandbox off and on. The shell's host pids are found by a token in its
 * command line: inside the sandbox `$$` is a pid of its own namespace.
 */
const SANDBOX_MODES = [["off", true], ["workspace-write", requireBwrap("test/cli/Run.test.ts")]] as const

for (const [mode, runs] of SANDBOX_MODES) {
  describe.runIf(runs)(`baton run: Ctrl-C and a crash (sandbox ${mode})`, () => {
    const slowCall = (token: string) =>
      Reply.toolCalls([{ id: "call_1", name: "Bash", args: { command: `echo up > bash.up; exec -a ${token} sleep 60` } }])

    it.scopedLive("SIGINT during a long Bash: the shell is killed, the stream ends with abort, exit 130; --continue sends the carry-over", () =>
      Effect.gen(function*() {
        const token = `sigint${process.pid}${Date.now()}`
        const { dirs, env, server, ws } = yield* setup(slowCall(token), Reply.text("Picking up where we stopped."))
        const cli = yield* startCli(["run", "--json", "--approve", "allow", ...ws, "run the slow thing"], { env: { ...env, BATON_SANDBOX: mode } })
        yield* awaitFileText(Path.join(dirs.workspace, "bash.up"))
        assert.isAbove(pidsWith(token).length, 0)
        yield* cli.signal("SIGINT")
        const result = yield* cli.result
        assert.strictEqual(result.code, 130, result.stderr)
        const events = jsonEvents(result.stdout)
        assert.deepStrictEqual(events.at(-1)?.type, "abort")
        assert.deepStrictEqual(byType(events, "tool_return").map((r) => r.status), ["interrupted"])
        assert.deepStrictEqual(pidsWith(token), [], "the shell and everything it started are gone")
        const first = JSON.parse(result.stdout.split("\n")[0]!) as { sandbox?: { mode: string; active: boolean } }
        assert.deepStrictEqual([first.sandbox?.mode, first.sandbox?.active], [mode, mode !== "off"], "the first event says how commands ran")

        const next = yield* runCli(["run", "--json", "--continue", ...ws, "go on"], { env: { ...env, BATON_SANDBOX: mode } })
        assert.strictEqual(next.code, 0, next.stderr)
        const resumed = (yield* server.requests)[1]!.body
        assert.include(resumed, "[interrupted: tool aborted by user]", "the interrupted call is closed in the next request")
        assert.include(resumed, "go on")
      }))

    it.scopedLive("a shell left running by a crashed run is gone by the next start; the warning goes to stderr, stdout stays JSON", () =>
      Effect.gen(function*() {
        const token = `crash${process.pid}${Date.now()}`
        const { dirs, env, ws } = yield* setup(slowCall(token), Reply.text("Hello."))
        const modeEnv = { ...env, BATON_SANDBOX: mode }
        const crashed = yield* startCli(["run", "--json", "--approve", "allow", ...ws, "start the slow thing"], { env: modeEnv })
        yield* awaitFileText(Path.join(dirs.workspace, "bash.up"))
        const pids = pidsWith(token)
        // The group's leader (the shell, or bubblewrap around it) is recorded under the home before the command runs.
        const records = Fs.readdirSync(Path.join(dirs.home, "processes")).filter((name) => name.endsWith(".json"))
        assert.isTrue(records.some((name) => pids.includes(Number(name.slice(0, -5)))), `${records} names one of ${pids}`)
        yield* crashed.signal("SIGKILL")
        yield* crashed.result
        if (mode === "off") {
          assert.isAbove(pidsWith(token).length, 0, "a SIGKILLed Baton cannot stop its detached shell itself")
        } else {
          // bubblewrap's die-with-parent: the sandbox goes with the process that started it.
          yield* eventually(Effect.sync(() => pidsWith(token).length === 0), "the sandbox died with Baton")
        }
        const next = yield* runCli(["run", "--json", ...ws, "hello"], { env: modeEnv })
        assert.strictEqual(next.code, 0, next.stderr)
        assert.deepStrictEqual(pidsWith(token), [], "nothing of the crashed run's shell is left")
        if (mode === "off") assert.include(next.stderr, "killed 1 shell process group(s) left by a crashed run")
        assert.deepStrictEqual(Fs.readdirSync(Path.join(dirs.home, "processes")).filter((name) => name.endsWith(".json")), [], "its record is gone")
        assert.deepStrictEqual(byType(jsonEvents(next.stdout), "assistant_message").map((m) => m.content), ["Hello."])
      }))
  })
}

describe("baton run: replay (built CLI)", () => {
  it.scopedLive("a task recorded with BATON_RECORD_CASSETTE replays with `baton replay`, no model server needed", () =>
    Effect.gen(function*() {
      const { dirs, env, ws } = yield* setup(readCall(), Reply.text("It says alpha."))
      const cassette = Path.join(dirs.root, "task.jsonl")
      const recorded = yield* runCli(["run", "--json", "--approve", "allow", ...ws, "what is in a.txt?"], { env: { ...env, BATON_RECORD_CASSETTE: cassette } })
      assert.strictEqual(recorded.code, 0, recorded.stderr)
      const replayed = yield* runCli(["replay", cassette, "--json", "--approve", "allow", ...ws], { env: { BATON_HOME: dirs.home } })
      assert.strictEqual(replayed.code, 0, replayed.stderr)
      const before = jsonEvents(recorded.stdout)
      const after = jsonEvents(replayed.stdout)
      assert.deepStrictEqual(modelChunks(after), modelChunks(before))
      assert.deepStrictEqual(byType(after, "assistant_message").map((m) => m.content), ["It says alpha."])
      assert.deepStrictEqual(byType(after, "user_message").map((m) => m.content), ["what is in a.txt?"])

      // Replay is strict: the model saw "alpha"; a workspace where the file differs is a miss, not a guess.
      Fs.writeFileSync(Path.join(dirs.workspace, "a.txt"), "beta\n")
      const diverged = yield* runCli(["replay", cassette, "--approve", "allow", ...ws], { env: { BATON_HOME: dirs.home } })
      assert.strictEqual(diverged.code, 1)
      assert.include(diverged.stderr, "no recording left")
    }))
})

describe("baton run --approve ask (built CLI in a pseudo-terminal)", () => {
  it.scopedLive("the question on the terminal takes only y/a/n; Ctrl-C at it stops the task like any Ctrl-C (exit 130)", () =>
    Effect.gen(function*() {
      const { env, server, ws } = yield* setup(readCall(), Reply.text("It says alpha."), readCall())
      const answered = yield* runInPty(["run", "--approve", "ask", ...ws, "what is in a.txt?"], [
        { expect: "answer \\(y/a/n\\) ›" },
        { send: "maybe\r" },
        { expect: "type y, a or n" },
        { send: "y\r" },
        { expect: "It says alpha\\." },
        { wait_exit: true }
      ], env)
      assert.isTrue(answered.ok, `${answered.reason}\n${answered.transcript}`)
      assert.strictEqual(answered.exit_code, 0, answered.transcript)

      const interrupted = yield* runInPty(["run", "--approve", "ask", ...ws, "read it again"], [
        { expect: "answer \\(y/a/n\\) ›" },
        { send: "\u0003" },
        { wait_exit: true }
      ], env)
      assert.isTrue(interrupted.ok, `${interrupted.reason}\n${interrupted.transcript}`)
      assert.strictEqual(interrupted.exit_code, 130, interrupted.transcript)
      assert.strictEqual((yield* server.requests).length, 3, "nothing was sent to the model after the interrupt")
    }))
})
