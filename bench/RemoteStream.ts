/**
 * What the HTTP hop costs: one long run collected through the local backend and through layerRemote
 * talking to an in-process `baton serve` over loopback, and the time to the first chunk of short runs.
 */
import { Context, Effect, Layer, Stream } from "effect"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Fs from "node:fs"
import { BatonServer, serve } from "../src/programs/server/Server.js"
import { Backend } from "../src/services/Backend.js"
import { layerLocal } from "../src/programs/backend/BackendLocal.js"
import { layerRemote } from "../src/services/backend/Remote.js"
import { layerScripted, ProviderScript, Turn } from "../src/services/provider/Scripted.js"
import { layerSqlite } from "../src/services/store/Sqlite.js"
import { Otid } from "../src/domain/Ids.js"
import { median } from "./support/Child.js"
import type { Row } from "./support/Table.js"

const deltas = 5_000
const text = Array.from({ length: deltas }, (_, i) => `w${i} `)


export const remoteRows = Effect.gen(function*() {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-bench-"))
  const deps = yield* Layer.build(Layer.merge(layerSqlite({ filename: Path.join(dir, "baton.db") }), layerScripted([])))
  const script = Context.get(deps, ProviderScript)
  const local = Context.get(yield* Layer.build(layerLocal()).pipe(Effect.provide(deps)), Backend)
  const server = Context.get(yield* Layer.build(serve({ port: 0 }).pipe(Layer.provide(Layer.succeed(Backend, local)))), BatonServer)
  const remote = Context.get(yield* Layer.build(layerRemote({ url: server.url })), Backend)

  const long = (backend: Backend["Type"]) =>
    Effect.gen(function*() {
      yield* script.push(Turn.text(text))
      const conv = yield* backend.createConversation({})
      const start = performance.now()
      const chunks = yield* Stream.runCount(backend.send(conv.id, { messages: [{ type: "user_message", content: "go", otid: Otid.make("go") }] }))
      const ms = performance.now() - start
      return { chunks, ms: Math.round(ms), chunksPerSecond: Math.round(chunks / (ms / 1000)) }
    })
  const firstChunk = (backend: Backend["Type"]) =>
    Effect.gen(function*() {
      const times: Array<number> = []
      for (let i = 0; i < 30; i++) {
        yield* script.push(Turn.text("ok"))
        const conv = yield* backend.createConversation({})
        const start = performance.now()
        let first = 0
        yield* Stream.runForEach(backend.send(conv.id, { messages: [{ type: "user_message", content: "hi", otid: Otid.make(`hi-${performance.now()}`) }] }), () => Effect.sync(() => { if (first === 0) first = performance.now() - start }))
        times.push(first)
      }
      return Math.round(median(times) * 100) / 100
    })

  yield* long(local) // warm-up
  yield* long(remote)
  const localRun = yield* long(local)
  const remoteRun = yield* long(remote)
  const localFirst = yield* firstChunk(local)
  const remoteFirst = yield* firstChunk(remote)
  Fs.rmSync(dir, { recursive: true, force: true })
  const rows: ReadonlyArray<Row> = [
    {
      figure: `remote: one run of ${deltas.toLocaleString("en")} deltas (scripted model, 1 a read) over HTTP`,
      value: remoteRun.chunksPerSecond,
      unit: "chunks/s",
      floor: { value: localRun.chunksPerSecond, label: "local backend" }
    },
    { figure: "remote: first chunk of a short run", value: remoteFirst, unit: "ms", floor: { value: localFirst, label: "local backend" } }
  ]
  return rows
}).pipe(Effect.scoped, Effect.orDie)
