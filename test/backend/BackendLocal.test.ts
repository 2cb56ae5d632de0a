import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope, Stream } from "effect"
import * as Path from "node:path"
import { Backend } from "../../src/services/Backend.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { layerScripted, Turn } from "../../src/services/provider/Scripted.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import { backendContract } from "../support/backendContract.js"
import { onPostgres, pgStore } from "../support/pgDatabase.js"
import { tempDir } from "../support/tempDir.js"
import { collect, eventually, input, toolResult, user } from "../support/testing.js"

backendContract("local over StoreMemory", (script) =>
  layerLocal().pipe(Layer.provideMerge(layerScripted(script)), Layer.provide(layerMemory)))

const sqliteFile = Layer.unwrapScoped(Effect.map(tempDir, (dir) => layerSqlite({ filename: Path.join(dir, "baton.db") })))

backendContract("local over StoreSqlite", (script) =>
  layerLocal().pipe(Layer.provideMerge(layerScripted(script)), Layer.provide(sqliteFile)))

onPostgres("Backend contract: local over StorePg", () =>
  backendContract("local over StorePg", (script) =>
    layerLocal().pipe(Layer.provideMerge(layerScripted(script)), Layer.provide(pgStore))))

describe("local backend restart", () => {
  it.scoped("a run cut off by closing the backend is closed as failed by the next one, which accepts the next message", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = Path.join(dir, "baton.db")
      const first = yield* Scope.make()
      const before = yield* Layer.buildWithScope(layerLocal().pipe(Layer.provide(layerScripted([Turn.stall({ text: "half" })])), Layer.provide(layerSqlite({ filename }))), first)
      const backend = Context.get(before, Backend)
      const conv = yield* backend.createConversation({ system_prompt: "" })
      const seen: Array<string> = []
      yield* Effect.forkScoped(Stream.runForEach(backend.send(conv.id, input(user("go"))), (c) => Effect.sync(() => seen.push(c.type))))
      yield* eventually(Effect.sync(() => seen.includes("text_delta")), "the run streamed")
      yield* Scope.close(first, Exit.void)

      const after = Context.get(
        yield* Layer.build(layerLocal().pipe(Layer.provide(layerScripted([Turn.text("again")])), Layer.provide(layerSqlite({ filename })))),
        Backend
      )
      const runs = (yield* after.history(conv.id)).flatMap((h) => (h.item.type === "stop_reason" ? [h.item] : []))
      assert.deepStrictEqual(runs.map((r) => [r.reason, r.error?.tag]), [["error", "ProcessStopped"]])
      const runId = (yield* after.history(conv.id)).find((h) => h.item.type === "request_begin")!.item.run_id!
      const replay = yield* collect(after.streamRun(runId, { after: 0 }))
      assert.deepStrictEqual(replay.map((c) => c.type).slice(-2), ["request_end", "stop_reason"])
      const end = replay.at(-2)!
      assert.strictEqual(end.type === "request_end" && end.status, "failed")
      // the text it had streamed is kept in the trace, never in the model context
      assert.isTrue((yield* after.history(conv.id)).some((h) => h.item.type === "assistant_message" && !h.inContext && h.item.content === "half"))
      const next = yield* collect(after.send(conv.id, input(user("again"))))
      const stop = next.at(-1)!
      assert.strictEqual(stop.type === "stop_reason" && stop.reason, "end_turn")
      assert.isTrue(next.some((c) => c.type === "assistant_message" && c.content === "again"))
    }))

  it.scoped("a run that died after issuing calls leaves them pending; a result committed before the crash is kept, only the others are asked", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = Path.join(dir, "baton.db")
      const first = yield* Scope.make()
      const calls = { toolCalls: [{ id: "c1", name: "Read" }, { id: "c2", name: "Read" }], text: "reading" }
      const before = yield* Layer.buildWithScope(layerLocal().pipe(Layer.provide(layerScripted([Turn.stall(calls)])), Layer.provide(layerSqlite({ filename }))), first)
      const backend = Context.get(before, Backend)
      const conv = yield* backend.createConversation({ system_prompt: "" })
      const seen: Array<string> = []
      yield* Effect.forkScoped(Stream.runForEach(backend.send(conv.id, input(user("go"))), (c) => Effect.sync(() => seen.push(c.type))))
      yield* eventually(Effect.sync(() => seen.filter((t) => t === "tool_call").length === 2), "both calls streamed")
      // c1's tool finished while the model was still streaming; then the process died.
      yield* backend.submitResult(conv.id, toolResult("c1", "one"))
      yield* Scope.close(first, Exit.void)

      const after = Context.get(
        yield* Layer.build(layerLocal().pipe(Layer.provideMerge(layerScripted([Turn.text("both read")])), Layer.provide(layerSqlite({ filename })))),
        Backend
      )
      assert.deepStrictEqual((yield* after.pendingApprovals(conv.id)).map((c) => String(c.tool_call_id)), ["c2"], "only the call without a result is asked again")
      const next = yield* collect(after.send(conv.id, input(toolResult("c2", "two"), user("again"))))
      assert.strictEqual(next.at(-1)!.type === "stop_reason" && next.at(-1)!.type, "stop_reason")
      const context = (yield* after.history(conv.id, { limit: 1000 })).filter((h) => h.inContext && h.item.type !== "user_message")
      assert.deepStrictEqual(
        context.map((h) => (h.item.type === "tool_call" || h.item.type === "tool_return" ? `${h.item.type}:${h.item.tool_call_id}` : h.item.type)),
        ["tool_call:c1", "tool_call:c2", "tool_return:c1", "tool_return:c2", "assistant_message"]
      )
      // The text the dead request had shown stays in the trace only.
      assert.isTrue((yield* after.history(conv.id)).some((h) => h.item.type === "assistant_message" && h.item.content === "reading" && !h.inContext))
    }))
})
