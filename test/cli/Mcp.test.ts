import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cliDirs, jsonEvents, processGone, runCli, startCli } from "../support/cliProcess.js"
import { awaitLine, FIXTURE, logLines } from "../support/mcp/fixture.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { awaitFileText } from "../support/Processes.js"
import { runInPty } from "../support/ptyProcess.js"
import { assertOrdering, byType } from "../support/sessionHarness.js"

/** MCP tools end to end: the built CLI, the loopback mock model, the fixture server over stdio from `.mcp.json`. */

const write = (file: string, value: unknown) => {
  Fs.mkdirSync(Path.dirname(file), { recursive: true })
  Fs.writeFileSync(file, JSON.stringify(value, null, 2))
}

const setup = (permissions: Record<string, ReadonlyArray<string>>, ...replies: ReadonlyArray<Reply>) =>
  Effect.gen(function*() {
    const server = yield* MockModelServer.make({ replies })
    const dirs = yield* cliDirs
    const log = Path.join(dirs.root, "fixture.log")
    write(Path.join(dirs.workspace, ".mcp.json"), {
      mcpServers: { fixture: { command: process.execPath, args: [FIXTURE], env: { FIXTURE_LOG: "${FIXTURE_LOG}" } } }
    })
    write(Path.join(dirs.workspace, ".baton", "settings.json"), { permissions })
    const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home, FIXTURE_LOG: log }
    return { server, dirs, env, log, ws: ["--workspace", dirs.workspace] }
  })

const call = (name: string, args: unknown = {}, id = "call_1") => Reply.toolCalls([{ id, name, args }])

/** The tool names and the tool results (by call id) a recorded Chat Completions request carried. */
const sent = (body: string) => {
  const json = JSON.parse(body) as {
    readonly tools?: ReadonlyArray<{ readonly function: { readonly name: string; readonly parameters: unknown } }>
    readonly messages: ReadonlyArray<{ readonly role: string; readonly content?: unknown; readonly tool_call_id?: string }>
  }
  return {
    tools: (json.tools ?? []).map((t) => t.function.name),
    schema: (name: string) => json.tools?.find((t) => t.function.name === name)?.function.parameters,
    results: json.messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m.content])
  }
}

describe("MCP tools through baton run (built CLI, loopback model, fixture server)", () => {
  it.scopedLive("the model calls mcp__fixture__echo, a rule mcp__fixture approves it, the next request carries the echo", () =>
    Effect.gen(function*() {
      const { env, server, ws } = yield* setup({ allow: ["mcp__fixture"] }, call("mcp__fixture__echo", { text: "hi" }), Reply.text("It said hi."))
      const result = yield* runCli(["run", "--json", ...ws, "echo hi"], { env })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.strictEqual(result.stderr, "")
      const events = jsonEvents(result.stdout)
      assertOrdering(events)
      assert.deepStrictEqual(byType(events, "approval_decision").map((d) => [d.decision, d.source, d.rule]), [["allow", "rule", "mcp__fixture"]])
      assert.deepStrictEqual(byType(events, "tool_return").map((r) => [r.status, r.content]), [["success", "echo: hi"]])
      const [first, second] = (yield* server.requests).map((r) => sent(r.body))
      assert.includeMembers(first!.tools, ["Read", "Bash", "mcp__fixture__echo", "mcp__fixture__sleep"])
      assert.deepStrictEqual(first!.schema("mcp__fixture__echo"), { type: "object", properties: { text: { type: "string" } }, required: ["text"] })
      assert.deepStrictEqual(second!.results, [["call_1", "echo: hi"]])
    }))

  it.scopedLive("deny rules block MCP tools; with no approver (and no rule) they are denied", () =>
    Effect.gen(function*() {
      const { env, log, ws } = yield* setup(
        { allow: ["mcp__fixture"], deny: ["mcp__fixture__spawn_child"] },
        call("mcp__fixture__spawn_child"),
        Reply.text("Denied."),
        call("mcp__fixture__spawn_child"),
        Reply.text("Denied again.")
      )
      const denied = yield* runCli(["run", "--json", "--approve", "allow", ...ws, "start a child"], { env })
      assert.strictEqual(denied.code, 0, denied.stderr)
      assert.deepStrictEqual(byType(jsonEvents(denied.stdout), "approval_decision").map((d) => [d.decision, d.source, d.rule]), [[
        "deny",
        "rule",
        "mcp__fixture__spawn_child"
      ]])
      Fs.rmSync(Path.join(ws[1]!, ".baton"), { recursive: true })
      const unapproved = yield* runCli(["run", "--json", ...ws, "start a child"], { env })
      assert.strictEqual(unapproved.code, 0, unapproved.stderr)
      const events = jsonEvents(unapproved.stdout)
      assert.deepStrictEqual(byType(events, "approval_decision").map((d) => [d.decision, d.source]), [["deny", "default"]])
      assert.deepStrictEqual(byType(events, "tool_return").map((r) => r.status), ["denied"])
      assert.isFalse(logLines(log).some((l) => l.startsWith("child ")), "the tool never ran")
    }))

  it.scopedLive("Ctrl-C during a slow MCP call: the server records the cancellation, the call is paired as interrupted in the next request", () =>
    Effect.gen(function*() {
      const { env, log, server, ws } = yield* setup({ allow: ["mcp__fixture"] }, call("mcp__fixture__sleep"), Reply.text("Picking up."))
      const cli = yield* startCli(["run", "--json", ...ws, "sleep"], { env })
      const id = (yield* awaitLine(log, /^start sleep /)).split(" ")[2]
      yield* cli.signal("SIGINT")
      const result = yield* cli.result
      assert.strictEqual(result.code, 130, result.stderr)
      const events = jsonEvents(result.stdout)
      assert.strictEqual(events.at(-1)?.type, "abort")
      assert.deepStrictEqual(byType(events, "tool_return").map((r) => r.status), ["interrupted"])
      assert.isTrue(logLines(log).some((l) => l.startsWith(`cancelled sleep ${id}`)), `the server heard notifications/cancelled:\n${logLines(log).join("\n")}`)
      const pid = Number(logLines(log).find((l) => l.startsWith("pid "))!.split(" ")[1])
      assert.isTrue(processGone(pid), "the server stopped with Baton")

      const next = yield* runCli(["run", "--json", "--continue", ...ws, "go on"], { env })
      assert.strictEqual(next.code, 0, next.stderr)
      const resumed = sent((yield* server.requests)[1]!.body)
      assert.deepStrictEqual(resumed.results, [["call_1", "[interrupted: tool aborted by user]"]])
    }))

  it.scopedLive("a server that crashes mid-call: an error result, the task goes on without its tools, stderr says why once", () =>
    Effect.gen(function*() {
      const { env, server, ws } = yield* setup({ allow: ["mcp__fixture"] }, call("mcp__fixture__crash"), Reply.text("The server crashed."))
      const result = yield* runCli(["run", "--json", ...ws, "crash it"], { env })
      assert.strictEqual(result.code, 0, result.stderr)
      const events = jsonEvents(result.stdout)
      const crashed = "MCP server \"fixture\" stopped during the call: it exited with code 3: fixture: crashing on purpose"
      assert.deepStrictEqual(byType(events, "tool_return").map((r) => [r.status, r.content]), [["error", crashed]])
      assert.deepStrictEqual(byType(events, "assistant_message").map((m) => m.content), ["The server crashed."])
      const second = sent((yield* server.requests)[1]!.body)
      assert.deepStrictEqual(second.results, [["call_1", crashed]])
      assert.isFalse(second.tools.some((t) => t.startsWith("mcp__")), "a dead server's tools are no longer offered")
      assert.include(second.tools, "Read")
      const notices = result.stderr.split("\n").filter((l) => l.includes("MCP server"))
      assert.deepStrictEqual(notices, ["baton: MCP server \"fixture\" exited with code 3: fixture: crashing on purpose; its tools are gone for the rest of this session"])
    }))

  it.scopedLive("mcpToolTimeoutMs: a call past it is cancelled at the server and the model gets an error result", () =>
    Effect.gen(function*() {
      const { dirs, env, log, server, ws } = yield* setup({ allow: ["mcp__fixture"] }, call("mcp__fixture__sleep"), Reply.text("Too slow."))
      write(Path.join(dirs.workspace, ".baton", "settings.json"), { permissions: { allow: ["mcp__fixture"] }, mcpToolTimeoutMs: 300 })
      const result = yield* runCli(["run", "--json", ...ws, "sleep"], { env })
      assert.strictEqual(result.code, 0, result.stderr)
      const timedOut = "mcp__fixture__sleep timed out after 300 ms (mcpToolTimeoutMs); the call was cancelled"
      assert.deepStrictEqual(byType(jsonEvents(result.stdout), "tool_return").map((r) => [r.status, r.content]), [["error", timedOut]])
      assert.deepStrictEqual(sent((yield* server.requests)[1]!.body).results, [["call_1", timedOut]])
      assert.isTrue(logLines(log).some((l) => l.startsWith("cancelled sleep")), logLines(log).join("\n"))
    }))

  it.scopedLive("Ctrl-C while a server is still starting: Baton exits 130 and the server is gone", () =>
    Effect.gen(function*() {
      const { dirs, env, server, ws } = yield* setup({})
      const pidFile = Path.join(dirs.root, "slow.pid")
      write(Path.join(dirs.workspace, ".mcp.json"), { mcpServers: { slow: { command: "sh", args: ["-c", `echo $$ > ${pidFile}; exec sleep 60`] } } })
      const cli = yield* startCli(["run", "--json", ...ws, "hello"], { env })
      const pid = Number(yield* awaitFileText(pidFile))
      yield* cli.signal("SIGINT")
      const result = yield* cli.result
      assert.strictEqual(result.code, 130, result.stderr)
      assert.isTrue(processGone(pid), "the starting server was killed")
      assert.strictEqual((yield* server.requests).length, 0)
    }))

  it.scopedLive("a server left running by a SIGKILLed Baton is killed at the next start", () =>
    Effect.gen(function*() {
      const { dirs, env, log, ws } = yield* setup({ allow: ["mcp__fixture"] }, call("mcp__fixture__sleep"), Reply.text("Hello."))
      const crashed = yield* startCli(["run", "--json", ...ws, "sleep"], { env })
      yield* awaitLine(log, /^start sleep /)
      const pid = Number((yield* awaitLine(log, /^pid /)).split(" ")[1])
      assert.deepStrictEqual(Fs.readdirSync(Path.join(dirs.home, "processes", "mcp")), [`${pid}.json`])
      yield* crashed.signal("SIGKILL")
      yield* crashed.result
      assert.isFalse(processGone(pid), "a SIGKILLed Baton cannot stop its server itself")
      // The crash left the call pending, so the next start asks again (DESIGN: re-running is the user's decision): deny it.
      write(Path.join(dirs.workspace, ".baton", "settings.json"), { permissions: { allow: ["mcp__fixture"], deny: ["mcp__fixture__sleep"] } })
      const next = yield* runCli(["run", "--json", "--continue", ...ws, "hello"], { env })
      assert.strictEqual(next.code, 0, next.stderr)
      assert.isTrue(processGone(pid), "the next start reaped it")
      assert.include(next.stderr, "killed 1 MCP server process group(s) left by a crashed run")
    }))
})

describe("approving an MCP call on a terminal (built CLI in a pseudo-terminal)", () => {
  it.scopedLive("the question shows the server's own hint, marked as unchecked; y runs the call", () =>
    Effect.gen(function*() {
      const { env, server, ws } = yield* setup({}, call("mcp__fixture__echo", { text: "hi" }), Reply.text("Done."))
      const result = yield* runInPty(["run", "--approve", "ask", ...ws, "echo hi"], [
        { expect: "MCP server \"fixture\" says this tool is read-only \\(its hint, not checked by Baton\\)" },
        { expect: "Allow mcp__fixture__echo" },
        { expect: "answer \\(y/a/n\\) ›" },
        { send: "y\r" },
        { expect: "Done\\." },
        { wait_exit: true }
      ], env)
      assert.isTrue(result.ok, `${result.reason}\n${result.transcript}`)
      assert.strictEqual(result.exit_code, 0, result.transcript)
      assert.deepStrictEqual(sent((yield* server.requests)[1]!.body).results, [["call_1", "echo: hi"]])
    }))
})

describe("baton chat with MCP servers (built CLI, piped input)", () => {
  it.scopedLive("the header counts the MCP tools; a server that did not start is named once, with why", () =>
    Effect.gen(function*() {
      const { dirs, env, ws } = yield* setup({}, Reply.text("Hello."))
      write(Path.join(dirs.workspace, ".mcp.json"), {
        mcpServers: {
          fixture: { command: process.execPath, args: [FIXTURE], env: { FIXTURE_LOG: "${FIXTURE_LOG}" } },
          missing: { command: "no-such-mcp-server-command" }
        }
      })
      const result = yield* runCli(["chat", ...ws], { env, input: "hi\n" })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.match(result.stdout, / · 11 MCP tools\n/)
      const notices = result.stdout.split("\n").filter((l) => l.includes("MCP server"))
      assert.strictEqual(notices.length, 1, result.stdout)
      assert.match(notices[0]!, /^MCP server "missing" could not run its command \(exit code 127\): .*; its tools are left out$/)
      assert.include(result.stdout, "Hello.")
    }))
})

describe("baton mcp list (built CLI)", () => {
  it.scopedLive("--json: one object per configured server, with the fixture's tools as the model sees them and why another failed", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const log = Path.join(dirs.root, "fixture.log")
      write(Path.join(dirs.workspace, ".mcp.json"), {
        mcpServers: {
          fixture: { command: process.execPath, args: [FIXTURE], env: { FIXTURE_LOG: log }, readOnly: true },
          missing: { command: "no-such-mcp-server-command" }
        }
      })
      const result = yield* runCli(["mcp", "list", "--json", "--workspace", dirs.workspace, "--home", dirs.home])
      assert.strictEqual(result.code, 0, result.stderr)
      const [fixture, missing] = result.stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>)
      assert.deepStrictEqual([fixture!["name"], fixture!["transport"], fixture!["status"], fixture!["read_only"]], ["fixture", "stdio", "ready", true])
      const tools = fixture!["tools"] as ReadonlyArray<{ readonly name: string; readonly tool: string; readonly annotations: unknown }>
      assert.includeMembers(tools.map((t) => t.name), ["mcp__fixture__echo", "mcp__fixture__sleep", "mcp__fixture__crash"])
      assert.deepStrictEqual(tools.find((t) => t.tool === "echo")?.annotations, { readOnlyHint: true })
      assert.deepStrictEqual([missing!["status"], missing!["transport"]], ["failed", "stdio"])
      assert.match(String(missing!["error"]), /could not run its command \(exit code 127\)/)
      const pid = Number(logLines(log).find((l) => l.startsWith("pid "))!.split(" ")[1])
      assert.isTrue(processGone(pid), "the servers are stopped again")

      const text = yield* runCli(["mcp", "list", "--workspace", dirs.workspace, "--home", dirs.home])
      assert.match(text.stdout, /^fixture {2}stdio · readOnly \(shared lock\) {2}ready, 11 tools/m)
      assert.match(text.stdout, /mcp__fixture__echo +Echoes the text back {2}\(server says: read-only; not trusted\)/)
      Fs.rmSync(Path.join(dirs.workspace, ".mcp.json"))
      const none = yield* runCli(["mcp", "list", "--workspace", dirs.workspace, "--home", dirs.home])
      assert.include(none.stdout, "no MCP servers configured")
    }))
})
