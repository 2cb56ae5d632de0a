import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, TestClock } from "effect"
import { McpCallError } from "../../src/domain/Errors.js"
import type { McpCallResult } from "../../src/services/McpClients.js"
import { makeTest, type ScriptedTool } from "../../src/services/mcp/Test.js"
import { awaitResult } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import { toolCall } from "../support/Calls.js"
import { fakeTools, makeProbe, type Probe, probedCall, settle } from "../support/FakeTools.js"
import { tempDir } from "../support/tempDir.js"
import { executeBatch } from "../support/Workspace.js"

/** MCP tools in the executor, over the scripted McpClients: names, results, limits, locks, timeouts. */

const schema = { type: "object", properties: { id: { type: "string" } } }

const scripted = (name: string, run: ScriptedTool["run"], annotations: ScriptedTool["annotations"] = {}): ScriptedTool => ({
  name,
  description: `scripted ${name}`,
  inputSchema: schema,
  annotations,
  run
})

const answer = (result: Partial<McpCallResult>): ScriptedTool["run"] => () => Effect.succeed({ content: [], isError: false, ...result })

/** A tool that behaves like the probe's fake built-ins: it starts, then waits for the test to release its `id`. */
const probed = (probe: Probe, name: string): ScriptedTool =>
  scripted(name, (args) =>
    Effect.map(probedCall(probe, String(args["id"])), (text): McpCallResult => ({ content: [{ type: "text", text }], isError: false })))

type Servers = Parameters<typeof makeTest>[0]

/** `servers` may use the probe that drives the fake built-ins, so MCP and built-in calls share one log. */
const setup = (servers: Servers | ((probe: Probe) => Servers), limits: { readonly outputChars?: number; readonly mcpTimeoutMs?: number } = {}) =>
  Effect.gen(function*() {
    const workspace = yield* tempDir
    const probe = makeProbe()
    const mcp = yield* makeTest(typeof servers === "function" ? servers(probe) : servers)
    const executor = yield* makeToolExecutor({ workspace, tools: fakeTools(probe), mcp: mcp.service, limits })
    const run = (name: string, args: unknown) =>
      Effect.flatMap(executeBatch(executor, [toolCall("c1", name, args)]), (batch) => Effect.map(batch.results, (r) => r[0]!))
    return { executor, mcp, probe, run }
  })

describe("ToolExecutor with MCP tools", () => {
  it.scoped("offered after the built-ins as mcp__<server>__<tool>, with the server's schema; the list follows the servers", () =>
    Effect.gen(function*() {
      const { executor, mcp } = yield* setup([
        { name: "docs", tools: [scripted("search", answer({})), scripted("a.b", answer({})), scripted("a_b", answer({}))] },
        { name: "down", status: "failed", error: "did not start within 5 ms (mcpStartupTimeoutMs)", tools: [] }
      ])
      const first = yield* executor.definitions
      assert.deepStrictEqual(first.map((d) => d.name), ["Read", "Edit", "Write", "Bash", "Grep", "mcp__docs__search"], "colliding names are refused")
      assert.deepStrictEqual(first.at(-1), { name: "mcp__docs__search", description: "scripted search", parameters: schema })
      yield* mcp.setTools("docs", [scripted("search", answer({})), scripted("fetch", answer({}))])
      const second = yield* executor.definitions
      assert.notStrictEqual(second, first)
      assert.deepStrictEqual(second.slice(5).map((d) => d.name), ["mcp__docs__search", "mcp__docs__fetch"])
      yield* mcp.exit("docs", "exited with code 1: boom")
      assert.deepStrictEqual((yield* executor.definitions).map((d) => d.name), ["Read", "Edit", "Write", "Bash", "Grep"])
    }))

  it.scoped("results: text and structured content as text, isError as an error result, output cut at the limit", () =>
    Effect.gen(function*() {
      const { run } = yield* setup([{
        name: "s",
        tools: [
          scripted("text", answer({ content: [{ type: "text", text: "hello" }, { type: "image", mimeType: "image/png", data: "AAAA" }] })),
          scripted("structured", answer({ structuredContent: { sum: 5 } })),
          scripted("echoed", answer({ content: [{ type: "text", text: "{\"sum\": 5}" }], structuredContent: { sum: 5 } })),
          scripted("failing", answer({ content: [{ type: "text", text: "no such page" }], isError: true })),
          scripted("empty", answer({})),
          scripted("big", answer({ content: [{ type: "text", text: "x".repeat(5_000) }] })),
          scripted("unreachable", () => Effect.fail(new McpCallError({ server: "s", tool: "unreachable", message: "MCP server \"s\" stopped during the call: it exited with code 1" })))
        ]
      }], { outputChars: 1_000 })
      const text = yield* run("mcp__s__text", {})
      // An MCP image becomes an image for the model, not a note about one.
      assert.deepStrictEqual([text.status, text.output], ["success", "hello\n[image: image/png, 0.0 KB]"])
      assert.deepStrictEqual(text.images, [{ media_type: "image/png", data: "AAAA" }])
      assert.strictEqual((yield* run("mcp__s__structured", {})).output, "{\"sum\":5}")
      assert.strictEqual((yield* run("mcp__s__echoed", {})).output, "{\"sum\": 5}", "not twice when a text part already is the JSON")
      const failing = yield* run("mcp__s__failing", {})
      assert.deepStrictEqual([failing.status, failing.output], ["error", "no such page"])
      assert.strictEqual((yield* run("mcp__s__empty", {})).output, "(no output)")
      assert.strictEqual(
        (yield* run("mcp__s__big", {})).output,
        `${"x".repeat(1_000)}\n[output truncated: 4000 of 5000 characters omitted; call the tool with narrower arguments to see the rest]`
      )
      const unreachable = yield* run("mcp__s__unreachable", {})
      assert.deepStrictEqual([unreachable.status, unreachable.output], ["error", "MCP server \"s\" stopped during the call: it exited with code 1"])
      const notObject = yield* run("mcp__s__text", [1])
      assert.deepStrictEqual([notObject.status, notObject.output], ["error", "Invalid arguments for mcp__s__text: expected a JSON object"])
    }))

  it.scoped("a call to a tool that is not offered says why", () =>
    Effect.gen(function*() {
      const { mcp, run } = yield* setup([{ name: "s", tools: [scripted("one", answer({}))] }])
      assert.strictEqual((yield* run("mcp__s__two", {})).output, "MCP server \"s\" offers no tool mcp__s__two. Its tools: mcp__s__one")
      yield* mcp.exit("s", "exited with code 1: boom")
      assert.strictEqual((yield* run("mcp__s__one", {})).output, "MCP server \"s\" is not running (it exited with code 1: boom); its tools are unavailable")
      assert.match((yield* run("mcp__nope__x", {})).output, /^Unknown tool "mcp__nope__x"\. Available tools: Read, /)
    }))

  it.scoped("a global-lock MCP call never overlaps an Edit, whichever starts first", () =>
    Effect.gen(function*() {
      const { executor, probe } = yield* setup((probe) => [{ name: "s", tools: [probed(probe, "act")] }])
      const batch = yield* executeBatch(executor, [
        toolCall("e1", "Edit", { file_path: "a" }),
        toolCall("m1", "mcp__s__act", { id: "m1" }),
        toolCall("e2", "Edit", { file_path: "b" }),
        toolCall("m2", "mcp__s__act", { id: "m2" })
      ])
      yield* Effect.forEach(["m1", "e2", "m2"], probe.release)
      yield* Deferred.await(probe.started("e1"))
      yield* settle
      assert.deepStrictEqual(probe.log, ["start e1"], "the MCP call waits for the Edit, and the Edit behind it for the MCP call")
      yield* probe.release("e1")
      const results = yield* batch.results
      assert.deepStrictEqual(results.map((r) => r.status), ["success", "success", "success", "success"])
      assert.deepStrictEqual(probe.log, ["start e1", "end e1", "start m1", "end m1", "start e2", "end e2", "start m2", "end m2"])
      for (const running of probe.overlaps.values()) assert.deepStrictEqual(running, [])
    }))

  it.scoped("a server the settings mark readOnly takes the shared lock: its calls overlap Reads, and each other", () =>
    Effect.gen(function*() {
      const { executor, probe } = yield* setup((probe) => [{ name: "docs", readOnly: true, tools: [probed(probe, "search")] }])
      const batch = yield* executeBatch(executor, [
        toolCall("r1", "Read", { file_path: "a" }),
        toolCall("m1", "mcp__docs__search", { id: "m1" }),
        toolCall("r2", "Read", { file_path: "b" }),
        toolCall("m2", "mcp__docs__search", { id: "m2" })
      ])
      yield* Effect.forEach(["r1", "m1", "r2", "m2"], (id) => Deferred.await(probe.started(id)))
      assert.sameMembers([...probe.overlaps.get("m2")!], ["r1", "m1", "r2"], "all four run at once")
      yield* Effect.forEach(["r1", "m1", "r2", "m2"], probe.release)
      yield* batch.results
    }))

  it.scoped("a readOnlyHint from the server is shown, never trusted: without the setting the call is global", () =>
    Effect.gen(function*() {
      const { executor, probe } = yield* setup((probe) => [{ name: "s", tools: [{ ...probed(probe, "look"), annotations: { readOnlyHint: true } }] }])
      const batch = yield* executeBatch(executor, [toolCall("r1", "Read", { file_path: "a" }), toolCall("m1", "mcp__s__look", { id: "m1" })])
      yield* probe.release("m1")
      yield* Deferred.await(probe.started("r1"))
      yield* settle
      assert.deepStrictEqual(probe.log, ["start r1"])
      yield* probe.release("r1")
      yield* batch.results
      assert.deepStrictEqual(probe.overlaps.get("m1"), [])
    }))

  it.scoped("mcpToolTimeoutMs: a call that takes longer is cancelled and becomes an error result", () =>
    Effect.gen(function*() {
      const cancelled = yield* Deferred.make<void>()
      const { executor } = yield* setup([{
        name: "s",
        tools: [scripted("slow", () => Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(cancelled, undefined))))]
      }], { mcpTimeoutMs: 5_000 })
      const fiber = yield* executor.start(toolCall("c1", "mcp__s__slow", {}))
      yield* settle
      yield* TestClock.adjust("5 seconds")
      const result = yield* awaitResult(toolCall("c1", "mcp__s__slow", {}), fiber)
      assert.deepStrictEqual([result.status, result.output], ["error", "mcp__s__slow timed out after 5000 ms (mcpToolTimeoutMs); the call was cancelled"])
      yield* Deferred.await(cancelled)
    }))

  it.scoped("interrupting a running MCP call interrupts the call itself (the adapter cancels it at the server)", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const cancelled = yield* Deferred.make<void>()
      const { executor } = yield* setup([{
        name: "s",
        tools: [scripted("slow", () => Deferred.succeed(started, undefined).pipe(Effect.zipRight(Effect.never), Effect.onInterrupt(() => Deferred.succeed(cancelled, undefined))))]
      }])
      const call = toolCall("c1", "mcp__s__slow", {})
      const fiber = yield* executor.start(call)
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      yield* Deferred.await(cancelled)
      assert.strictEqual((yield* awaitResult(call, fiber)).status, "interrupted")
    }))
})
