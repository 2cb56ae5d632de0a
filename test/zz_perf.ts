import { Effect } from "effect"
import { Otid, ToolCallId } from "../src/domain/Ids.js"
import { Store } from "../src/services/Store.js"
import { layerSqlite } from "../src/services/StoreSqlite.js"
import * as Fs from "node:fs"
Fs.rmSync("/tmp/st/p.db", { force: true }); Fs.rmSync("/tmp/st/p.db-wal", { force: true }); Fs.rmSync("/tmp/st/p.db-shm", { force: true })
const program = Effect.gen(function*() {
  const store = yield* Store
  const c = yield* store.createConversation({})
  const { run } = yield* store.createRun(c.id, Otid.make("o"), "turn")
  let seq = 0
  const N = 500
  const t0 = performance.now()
  for (let i = 0; i < N; i++) {
    const callId = ToolCallId.make(`c${i}`)
    yield* store.commit({ conversationId: c.id, items: [
      { item: { type: "assistant_message", content: `x${i}` } },
      { item: { type: "tool_call", tool_call_id: callId, name: "Bash", arguments: "{}" } },
      { item: { type: "tool_return", tool_call_id: callId, status: "success", content: "x".repeat(300), otid: Otid.make("o") } }],
      chunks: [0,1,2,3].map(() => ({ type: "text_delta" as const, content: "d", run_id: run.id, seq: ++seq })) })
  }
  const t1 = performance.now()
  console.log("commit ms", ((t1 - t0) / N).toFixed(3))
  const t2 = performance.now()
  for (let i = 0; i < N; i++) yield* store.commit({ conversationId: c.id, chunks: [{ type: "text_delta" as const, content: "d", run_id: run.id, seq: ++seq }] })
  console.log("chunk-only commit ms", ((performance.now() - t2) / N).toFixed(3))
  const t3 = performance.now()
  for (let i = 0; i < N; i++) yield* store.activeRun(c.id)
  console.log("activeRun ms", ((performance.now() - t3) / N).toFixed(3))
})
await Effect.runPromise(program.pipe(Effect.provide(layerSqlite({ filename: "/tmp/st/p.db" }))))
