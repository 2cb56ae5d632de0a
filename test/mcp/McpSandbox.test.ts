import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { McpServerConfig } from "../../src/domain/McpConfig.js"
import { McpClients } from "../../src/services/McpClients.js"
import { layer } from "../../src/services/mcp/Live.js"
import type { SandboxConfig } from "../../src/services/Sandbox.js"
import { config, fixtureEntry } from "../support/mcp/fixture.js"
import { requireBwrap } from "../support/sandbox.js"
import { tempDir } from "../support/tempDir.js"

/** A stdio MCP server marked `sandbox: true` runs in the same sandbox as Bash, or not at all. */

const started = (servers: ReadonlyArray<McpServerConfig>, registry: string, sandbox: SandboxConfig) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const context = yield* Layer.buildWithScope(layer({ servers, killGraceMs: 500, processRegistryDir: registry, sandbox }), scope)
    return { mcp: Context.get(context, McpClients), close: Scope.close(scope, Exit.void) }
  })

const setup = Effect.gen(function*() {
  const dir = yield* tempDir
  const log = Path.join(dir, "fixture.log")
  return { dir, registry: Path.join(dir, "processes"), fixture: config("fixture", fixtureEntry(log, { sandbox: true }), dir) }
})

describe.runIf(requireBwrap("test/mcp/McpSandbox.test.ts"))("an MCP server in the sandbox", () => {
  it.scopedLive("starts inside bubblewrap, answers calls, and goes whole when closed", () =>
    Effect.gen(function*() {
      const { dir, fixture, registry } = yield* setup
      const { close, mcp } = yield* started([fixture], registry, { mode: "workspace-write", home: Path.join(dir, "home") })
      const [server] = yield* mcp.servers
      assert.strictEqual(server?.status, "ready", server?.error)
      assert.deepStrictEqual(yield* mcp.call("fixture", "echo", { text: "hi" }), { content: [{ type: "text", text: "echo: hi" }], isError: false })
      const [record] = Fs.readdirSync(registry)
      const leader = Number(record!.slice(0, -5))
      assert.strictEqual(Fs.readFileSync(`/proc/${leader}/comm`, "utf8").trim(), "bwrap", "the recorded group's leader is the sandbox")
      yield* close
      assert.deepStrictEqual(Fs.readdirSync(registry), [], "the group is gone, and its record")
    }))
})

describe("an MCP server that asks for the sandbox where none is available", () => {
  it.scopedLive("does not start, and says why", () =>
    Effect.gen(function*() {
      const { dir, fixture, registry } = yield* setup
      const { mcp } = yield* started([fixture], registry, { mode: "workspace-write", searchPath: dir })
      const [server] = yield* mcp.servers
      assert.strictEqual(server?.status, "failed")
      assert.include(server?.error, "asks for the sandbox")
      assert.include(server?.error, "bwrap not found")
    }))
})
