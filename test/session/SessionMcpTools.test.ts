import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Ref } from "effect"
import { open } from "../../src/programs/session/Session.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { makeTest, type ScriptedTool } from "../../src/services/mcp/Test.js"
import { layerScripted, ProviderScript, Turn } from "../../src/services/provider/Scripted.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { ToolExecutor } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import { byType } from "../support/sessionHarness.js"
import { tempDir } from "../support/tempDir.js"
import { collect } from "../support/testing.js"

/** The tool list a session sends follows the MCP servers: a listChanged between two model requests reaches the second. */

const tool = (name: string, run: ScriptedTool["run"]): ScriptedTool => ({ name, description: name, inputSchema: { type: "object" }, annotations: {}, run })

describe("Session with MCP tools", () => {
  it.scoped("a tool added by listChanged during a task is offered in the task's next request; rules name the server", () =>
    Effect.gen(function*() {
      const workspace = yield* tempDir
      const added = yield* Ref.make(false)
      const mcp = yield* makeTest([{ name: "docs", tools: [] }])
      yield* mcp.setTools("docs", [
        tool("add", () =>
          Effect.gen(function*() {
            yield* Ref.set(added, true)
            yield* mcp.setTools("docs", [tool("add", () => Effect.die("once")), tool("fresh", () => Effect.die("unused"))])
            return { content: [{ type: "text", text: "added fresh" }], isError: false }
          }))
      ])
      const executor = yield* makeToolExecutor({ workspace, mcp: mcp.service })
      const layer = layerLocal().pipe(
        Layer.provideMerge(layerScripted([Turn.toolCalls([{ id: "c1", name: "mcp__docs__add" }]), Turn.text("done")])),
        Layer.provide(layerMemory),
        Layer.provideMerge(Layer.succeed(ToolExecutor, executor))
      )
      yield* Effect.gen(function*() {
        const session = yield* open({ rules: { allow: ["mcp__docs"], ask: [], deny: [], additionalDirectories: [] } })
        const events = yield* collect(session.run("add a tool"))
        assert.deepStrictEqual(byType(events, "approval_decision").map((d) => [d.decision, d.rule]), [["allow", "mcp__docs"]])
        assert.deepStrictEqual(byType(events, "tool_return").map((r) => [r.status, r.content]), [["success", "added fresh"]])
        assert.isTrue(yield* Ref.get(added))
        const requests = yield* Effect.flatMap(ProviderScript, (s) => s.requests)
        const mcpTools = requests.map((r) => r.tools.map((t) => t.name).filter((n) => n.startsWith("mcp__")))
        assert.deepStrictEqual(mcpTools, [["mcp__docs__add"], ["mcp__docs__add", "mcp__docs__fresh"]])
      }).pipe(Effect.provide(layer))
    }))
})
