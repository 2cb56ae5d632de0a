import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { McpClients } from "../../src/services/McpClients.js"
import { layer } from "../../src/services/mcp/Live.js"
import { awaitResult } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import { toolCall } from "../support/Calls.js"
import { fakeTools, makeProbe, settle } from "../support/FakeTools.js"
import { awaitLine, config, fixtureEntry } from "../support/mcp/fixture.js"
import { tempDir } from "../support/tempDir.js"
import { executeBatch } from "../support/Workspace.js"

/** The workspace's locks around calls to a real MCP server (the fixture's `hold` answers once its release file exists). */

const setup = (readOnly: boolean) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const log = Path.join(dir, "fixture.log")
    const context = yield* Layer.build(layer({ servers: [config("fixture", fixtureEntry(log, { readOnly }), dir)], killGraceMs: 500 }))
    const probe = makeProbe()
    const executor = yield* makeToolExecutor({ workspace: dir, tools: fakeTools(probe), mcp: Context.get(context, McpClients) })
    const release = (name: string) => Effect.sync(() => Fs.writeFileSync(Path.join(dir, `release-${name}`), ""))
    return { executor, log, probe, release }
  })

describe("MCP calls under the workspace's locks (the fixture server)", () => {
  it.scopedLive("a global-lock call holds off an Edit until it has answered", () =>
    Effect.gen(function*() {
      const { executor, log, probe, release } = yield* setup(false)
      const batch = yield* executeBatch(executor, [toolCall("m1", "mcp__fixture__hold", { name: "one" }), toolCall("e1", "Edit", { file_path: "a" })])
      yield* probe.release("e1")
      yield* awaitLine(log, /^start hold one$/)
      yield* settle
      assert.deepStrictEqual(probe.log, [], "the Edit waits while the server holds the call")
      yield* release("one")
      const results = yield* batch.results
      assert.deepStrictEqual(results.map((r) => [r.status, r.output]), [["success", "held one"], ["success", "output of e1"]])
      assert.deepStrictEqual(probe.overlaps.get("e1"), [])
    }))

  it.scopedLive("a readOnly server's call answers while a Read is still running", () =>
    Effect.gen(function*() {
      const { executor, probe } = yield* setup(true)
      const read = yield* executor.start(toolCall("r1", "Read", { file_path: "a" }))
      yield* Deferred.await(probe.started("r1"))
      const call = toolCall("m1", "mcp__fixture__echo", { text: "meanwhile" })
      // Under the global lock this would wait for the Read, which is released only below.
      const echoed = yield* awaitResult(call, yield* executor.start(call)).pipe(
        Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => "the readOnly call waited for the Read" })
      )
      assert.deepStrictEqual([echoed.status, echoed.output], ["success", "echo: meanwhile"])
      assert.isTrue(probe.running.has("r1"), "the Read was running all along")
      yield* probe.release("r1")
      assert.strictEqual((yield* Fiber.join(read)).output, "output of r1")
    }))
})
