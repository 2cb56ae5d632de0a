import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Scope, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { McpServerConfig } from "../../src/domain/McpConfig.js"
import { McpClients } from "../../src/services/McpClients.js"
import { layer } from "../../src/services/mcp/Live.js"
import { processGone } from "../support/cliProcess.js"
import { awaitLine, config, EVERYTHING, fixtureEntry, httpFixture, logLines } from "../support/mcp/fixture.js"
import { tempDir } from "../support/tempDir.js"

/** The live McpClients against real servers: the fixture over stdio, streamable HTTP and SSE, and server-everything. */

/** The layer built in a scope the test closes itself (and that closes anyway when the test ends). */
const started = (servers: ReadonlyArray<McpServerConfig>, options: { readonly startupTimeoutMs?: number; readonly processRegistryDir?: string } = {}) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const context = yield* Layer.buildWithScope(layer({ servers, killGraceMs: 500, ...options }), scope)
    return { mcp: Context.get(context, McpClients), close: Scope.close(scope, Exit.void) }
  })

const setup = Effect.gen(function*() {
  const dir = yield* tempDir
  const log = Path.join(dir, "fixture.log")
  return { dir, log, fixture: config("fixture", fixtureEntry(log), dir) }
})

describe("McpClients over stdio (the fixture)", () => {
  it.scopedLive("starts, lists the tools with their hints, and maps text, isError, image and structured results", () =>
    Effect.gen(function*() {
      const { fixture } = yield* setup
      const { close, mcp } = yield* started([fixture])
      const [server] = yield* mcp.servers
      assert.strictEqual(server?.status, "ready", server?.error)
      assert.deepStrictEqual(server?.serverInfo, { name: "baton-fixture", version: "1.0.0" })
      const echo = server!.tools.find((t) => t.name === "echo")!
      assert.deepStrictEqual(echo.annotations, { readOnlyHint: true })
      assert.deepStrictEqual(echo.inputSchema, { type: "object", properties: { text: { type: "string" } }, required: ["text"] })
      assert.deepStrictEqual(yield* mcp.call("fixture", "echo", { text: "hi" }), { content: [{ type: "text", text: "echo: hi" }], isError: false })
      assert.deepStrictEqual(yield* mcp.call("fixture", "fail", { message: "nope" }), { content: [{ type: "text", text: "nope" }], isError: true })
      const image = yield* mcp.call("fixture", "image", {})
      assert.deepStrictEqual(image.content.map((c) => c.type), ["text", "image"])
      const structured = yield* mcp.call("fixture", "structured", {})
      assert.deepStrictEqual(structured.structuredContent, { sum: 5, terms: [2, 3] })
      const invalid = yield* mcp.call("fixture", "echo", {})
      assert.isTrue(invalid.isError, "invalid arguments come back as an error result")
      yield* close
    }))

  it.scopedLive("closing the scope stops the server and every process of its group", () =>
    Effect.gen(function*() {
      const { dir, fixture, log } = yield* setup
      const registry = Path.join(dir, "processes")
      const { close, mcp } = yield* started([fixture], { processRegistryDir: registry })
      const pid = Number((yield* awaitLine(log, /^pid /)).split(" ")[1])
      yield* mcp.call("fixture", "spawn_child", {})
      const child = Number((yield* awaitLine(log, /^child /)).split(" ")[1])
      assert.deepStrictEqual(Fs.readdirSync(registry), [`${pid}.json`], "the group is recorded while it runs")
      yield* close
      assert.isTrue(processGone(pid), "the server is gone")
      assert.isTrue(processGone(child), "and the child it started")
      assert.deepStrictEqual(Fs.readdirSync(registry), [], "and its record")
    }))

  it.scopedLive("an interrupted call is cancelled: the server hears notifications/cancelled", () =>
    Effect.gen(function*() {
      const { fixture, log } = yield* setup
      const { close, mcp } = yield* started([fixture])
      const call = yield* Effect.fork(mcp.call("fixture", "sleep", {}))
      const id = (yield* awaitLine(log, /^start sleep /)).split(" ")[2]
      yield* Fiber.interrupt(call)
      yield* awaitLine(log, new RegExp(`^cancelled sleep ${id}\\b`))
      assert.deepStrictEqual(yield* mcp.call("fixture", "echo", { text: "still here" }), { content: [{ type: "text", text: "echo: still here" }], isError: false })
      yield* close
    }))

  it.scopedLive("tools/list is followed through nextCursor to the last page", () =>
    Effect.gen(function*() {
      const { dir, log } = yield* setup
      const paged = config("paged", fixtureEntry(log, { env: { FIXTURE_LOG: log, FIXTURE_PAGE_SIZE: "4" } }), dir)
      const { close, mcp } = yield* started([paged])
      const [server] = yield* mcp.servers
      assert.strictEqual(server?.tools.length, 11)
      assert.deepStrictEqual(logLines(log).filter((l) => l.startsWith("list page")), ["list page 0", "list page 4", "list page 8"])
      yield* close
    }))

  it.scopedLive("listChanged: the new tool list is there for the next look", () =>
    Effect.gen(function*() {
      const { fixture } = yield* setup
      const { close, mcp } = yield* started([fixture])
      const seen = yield* Effect.fork(mcp.changes.pipe(Stream.filter((all) => all[0]!.tools.some((t) => t.name === "late")), Stream.runHead))
      yield* mcp.call("fixture", "add_tool", { name: "late" })
      assert.isTrue(Option.isSome(yield* Fiber.join(seen)))
      assert.deepStrictEqual(yield* mcp.call("fixture", "late", {}), { content: [{ type: "text", text: "late ran" }], isError: false })
      yield* close
    }))

  it.scopedLive("a server that dies mid-call: the call fails with why, the server is exited, later calls fail at once", () =>
    Effect.gen(function*() {
      const { fixture } = yield* setup
      const { close, mcp } = yield* started([fixture])
      const exited = yield* Effect.fork(mcp.changes.pipe(Stream.filter((all) => all[0]!.status === "exited"), Stream.runHead))
      const failure = yield* Effect.flip(mcp.call("fixture", "crash", {}))
      assert.strictEqual(failure.message, "MCP server \"fixture\" stopped during the call: it exited with code 3: fixture: crashing on purpose")
      const state = Option.getOrThrow(yield* Fiber.join(exited))[0]!
      assert.deepStrictEqual([state.status, state.error, state.tools], ["exited", "exited with code 3: fixture: crashing on purpose", []])
      const later = yield* Effect.flip(mcp.call("fixture", "echo", { text: "x" }))
      assert.strictEqual(later.message, "MCP server \"fixture\" is not running: it exited with code 3: fixture: crashing on purpose")
      yield* close
    }))

  it.scopedLive("servers that cannot start are reported, the others still start; a hung one is killed at the timeout", () =>
    Effect.gen(function*() {
      const { dir, fixture } = yield* setup
      const pidFile = Path.join(dir, "hung.pid")
      const { close, mcp } = yield* started([
        config("missing", { command: "no-such-mcp-server-command" }, dir),
        config("unset", { command: "x", env: { TOKEN: "${NOT_SET_ANYWHERE}" } }, dir),
        config("elsewhere", { command: "node", cwd: "no/such/dir" }, dir),
        fixture
      ])
      const states = yield* mcp.servers
      assert.deepStrictEqual(states.map((s) => [s.name, s.status]), [["missing", "failed"], ["unset", "failed"], ["elsewhere", "failed"], ["fixture", "ready"]])
      assert.match(states[0]!.error!, /could not run its command \(exit code 127\): .*no-such-mcp-server-command.*not found/)
      assert.strictEqual(states[1]!.error, "needs the environment variable NOT_SET_ANYWHERE, which is not set (write ${NOT_SET_ANYWHERE:-default} for a default)")
      assert.match(states[2]!.error!, /working directory .*no\/such\/dir does not exist/)
      yield* close
      // Alone, so the time limit is that server's only: the others' start-up takes what it takes.
      const hung = yield* started([config("hung", { command: "sh", args: ["-c", `echo $$ > ${pidFile}; exec sleep 60`] }, dir)], { startupTimeoutMs: 500 })
      assert.strictEqual((yield* hung.mcp.servers)[0]!.error, "did not start within 500 ms (mcpStartupTimeoutMs)")
      assert.isTrue(processGone(Number(Fs.readFileSync(pidFile, "utf8"))), "the hung server was killed")
      const refused = yield* Effect.flip(hung.mcp.call("hung", "x", {}))
      assert.strictEqual(refused.message, "MCP server \"hung\" is not running: it did not start within 500 ms (mcpStartupTimeoutMs)")
      yield* hung.close
    }))

  it.scopedLive("a value expanded from the environment never shows in what is said about its server", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const leaky = config("leaky", { command: "sh", args: ["-c", "echo \"my token is $TOKEN\" >&2; exit 1"], env: { TOKEN: "${LEAKY_TOKEN}" } }, dir, {
        LEAKY_TOKEN: "tok-very-secret"
      })
      const { close, mcp } = yield* started([leaky])
      const [state] = yield* mcp.servers
      assert.strictEqual(state?.error, "exited with code 1: my token is ***")
      yield* close
    }))
})

describe("McpClients against a published server and over HTTP", () => {
  it.scopedLive("@modelcontextprotocol/server-everything over stdio: its tools listed, echo answers", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const { close, mcp } = yield* started([config("everything", { command: EVERYTHING, args: ["stdio"] }, dir)])
      const [server] = yield* mcp.servers
      assert.strictEqual(server?.status, "ready", server?.error)
      assert.isAbove(server!.tools.length, 5)
      const result = yield* mcp.call("everything", "echo", { message: "hi" })
      assert.deepStrictEqual(result.content, [{ type: "text", text: "Echo: hi" }])
      yield* close
    }))

  it.scopedLive("streamable HTTP on 127.0.0.1: headers expanded from the environment, the session terminated at the end", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const log = Path.join(dir, "http.log")
      const server = yield* httpFixture("--http", log)
      const entry = { type: "http" as const, url: `http://127.0.0.1:${server.port}/mcp`, headers: { Authorization: "Bearer ${FIXTURE_TOKEN}" } }
      const { close, mcp } = yield* started([config("remote", entry, dir, { FIXTURE_TOKEN: "tok-123456" })])
      const [state] = yield* mcp.servers
      assert.deepStrictEqual([state?.status, state?.transport], ["ready", "http"], state?.error)
      assert.deepStrictEqual((yield* mcp.call("remote", "whoami", {})).content, [{ type: "text", text: "authorization: Bearer tok-123456" }])
      yield* close
      yield* awaitLine(log, /^session closed /)
    }))

  it.scopedLive("the older HTTP+SSE transport (\"type\": \"sse\")", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const server = yield* httpFixture("--sse", Path.join(dir, "sse.log"))
      const { close, mcp } = yield* started([config("old", { type: "sse", url: `http://127.0.0.1:${server.port}/sse` }, dir)])
      assert.deepStrictEqual((yield* mcp.call("old", "echo", { text: "sse" })).content, [{ type: "text", text: "echo: sse" }])
      yield* close
    }))

  it.scopedLive("an HTTP server that is not there fails to start, with the reason", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const { close, mcp } = yield* started([config("gone", { type: "http", url: "http://127.0.0.1:9/mcp" }, dir)])
      const [state] = yield* mcp.servers
      assert.strictEqual(state?.status, "failed")
      assert.isString(state?.error)
      yield* close
    }))
})
