/**
 * The `conversations-1000` load of conversations.ts on a cluster: `baton serve --cluster` runners
 * on one PostgreSQL (BENCH_DATABASE_URL, else BATON_TEST_DATABASE_URL — `scripts/with-postgres.sh
 * npm run bench -- cluster`), 3 runners against 1. Conversation i is created and streamed through
 * runner i mod N with the remote client, so most commands are routed to another runner's shard and
 * most streams follow a run owned elsewhere (the Store, woken by LISTEN/NOTIFY). "Persisted per
 * second" is read from the database: every run's last seq over the window its runs span.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Chunk, Context, Effect, Layer, Option, Redacted, Stream } from "effect"
import * as Fs from "node:fs"
import { type ConversationId, Otid } from "../src/domain/Ids.js"
import { Backend } from "../src/services/Backend.js"
import { layerRemote } from "../src/services/backend/Remote.js"
import { layer as layerPg } from "../src/services/store/Pg.js"
import { Store } from "../src/services/Store.js"
import { bin, converse, CONVERSATIONS, DELTAS, loopbackProcess, serveFlags } from "./conversations.js"
import { type Measured, spawnMeasured, tempDir } from "./support/Child.js"
import type { Row } from "./support/Table.js"

const DATABASE = process.env["BENCH_DATABASE_URL"] ?? process.env["BATON_TEST_DATABASE_URL"]

/** A schema of its own on the database, dropped with the scope; the URL that selects it. */
export const freshSchema = (url: string) =>
  Effect.gen(function*() {
    const admin = yield* PgClient.make({ url: Redacted.make(url) }).pipe(Effect.provide(Reactivity.layer), Effect.orDie)
    const schema = `baton_bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`
    yield* Effect.acquireRelease(
      Effect.orDie(admin`CREATE SCHEMA ${admin(schema)}`),
      () => Effect.orDie(admin`DROP SCHEMA ${admin(schema)} CASCADE`)
    )
    const parsed = new URL(url)
    parsed.searchParams.set("options", `-c search_path=${schema}`)
    return parsed.toString()
  })

const runner = (url: string, baseUrl: string, i: number) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const home = tempDir(`runner-${i}`)
      const running = spawnMeasured([...serveFlags, bin, "serve", "--port", "0", "--home", home, "--database", url, "--cluster", "--runner-port", String(35_400 + i)], {
        env: { BATON_PROVIDER: "openai-chat", BATON_MODEL: "bench", BATON_BASE_URL: baseUrl }
      })
      const [, address] = await running.waitFor(/baton serve: (http:\/\/\S+)/)
      let stopped: Promise<Measured> | undefined
      return { url: address!, home, stop: () => (stopped ??= (running.child.kill("SIGTERM"), running.exited)) }
    }),
    (r) => Effect.promise(() => r.stop().then(() => Fs.rmSync(r.home, { recursive: true, force: true })))
  )

/** Until every runner holds its share of the 300 shards (a run started before would move as they join). */
const settled = (urls: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    for (;;) {
      const held = await Promise.all(urls.map((u) => fetch(`${u}/healthz`).then((r) => r.json() as Promise<{ runner?: { shards: Array<number> } }>)))
      const shards = held.map((h) => h.runner?.shards.length ?? 0)
      if (shards.every((n) => n > 0) && shards.reduce((a, b) => a + b, 0) === 300) return
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  })

const scenario = (database: string, runners: number) =>
  Effect.gen(function*() {
    const url = yield* freshSchema(database)
    const model = yield* loopbackProcess({ paceMs: 20 })
    const started = yield* Effect.all(Array.from({ length: runners }, (_, i) => runner(url, model.baseUrl, i)), { concurrency: "unbounded" })
    yield* settled(started.map((r) => r.url))
    const backends = yield* Effect.forEach(started, (r) => Effect.map(Layer.build(layerRemote({ url: r.url })), (ctx) => Context.get(ctx, Backend)))
    const ids = yield* Effect.forEach(
      Array.from({ length: CONVERSATIONS }, (_, i) => i),
      (i) => Effect.map(backends[i % runners]!.createConversation({}), (c) => c.id),
      { concurrency: 50 }
    )
    const delays: Array<number> = []
    const began = performance.now()
    const outcomes = yield* Effect.forEach(ids, (id, i) => converse(backends[i % runners]!, id, delays), { concurrency: "unbounded" })
    const seconds = (performance.now() - began) / 1000
    // Stopped here (the scope would too) to read what each runner used.
    const usage = yield* Effect.promise(() => Promise.all(started.map((r) => r.stop())))
    const stored = yield* persisted(url, ids)
    for (const o of outcomes) {
      if (!o.ok || o.deltas !== DELTAS) process.stderr.write(`bench cluster: a stream read ${o.deltas} deltas, ${o.chunks} chunks${o.error !== undefined ? `: ${o.error}` : ""}\n`)
    }
    return {
      ...stored,
      seconds,
      errors: outcomes.filter((o) => !o.ok || o.deltas !== DELTAS).length,
      chunksPerSecond: stored.chunks / stored.seconds,
      cpuUsPerChunk: (usage.reduce((n, u) => n + u.cpuMs, 0) * 1000) / stored.chunks,
      peakRssMb: Math.max(...usage.map((u) => u.maxRssMb))
    }
  }).pipe(Effect.scoped, Effect.orDie)

const persisted = (url: string, ids: ReadonlyArray<ConversationId>) =>
  Effect.gen(function*() {
    const store = yield* Store
    const runs = (yield* Effect.forEach(ids, (id) => store.runByOtid(id, Otid.make(`go-${id}`)), { concurrency: 20 })).flatMap((r) => (Option.isSome(r) ? [r.value] : []))
    const window = Math.max(...runs.map((r) => r.updatedAt)) - Math.min(...runs.map((r) => r.createdAt))
    // Runs that reconnected: a shard that moved while they ran (a runner that fell behind its heartbeat).
    const reconnected = (yield* Effect.forEach(runs, (r) =>
      Effect.map(Stream.runCollect(store.readChunks(r.id, 0)), (chunks) =>
        Chunk.some(chunks, (c) => c.type === "request_end" && c.status === "retrying")), { concurrency: 20 })).filter(Boolean).length
    const failed = runs.filter((r) => r.stopReason !== "end_turn").map((r) => r.stopReason ?? r.status)
    return { chunks: runs.reduce((n, r) => n + r.lastSeq, 0), seconds: window / 1000, reconnected, failed, missing: ids.length - runs.length }
  }).pipe(Effect.provide(layerPg({ url })), Effect.scoped)

export const clusterRows: Effect.Effect<ReadonlyArray<Row>> = Effect.gen(function*() {
  const n = CONVERSATIONS.toLocaleString("en")
  if (DATABASE === undefined || DATABASE === "") {
    return [{ figure: "conversations-1000 on a cluster", value: Number.NaN, unit: "", note: "skipped: set BENCH_DATABASE_URL (or run under scripts/with-postgres.sh)" }]
  }
  const rows: Array<Row> = []
  for (const runners of (process.env["BENCH_RUNNERS"] ?? "1,3").split(",").map(Number)) {
    const figures = yield* scenario(DATABASE, runners)
    rows.push({
      figure: `conversations-1000 (serve --cluster, ${runners} runner${runners === 1 ? "" : "s"}, PostgreSQL): chunks persisted/s, ${n} × ${DELTAS} deltas 20 ms apart`,
      value: figures.chunksPerSecond,
      unit: "chunks/s",
      note: `${figures.errors} errors (${figures.reconnected} runs reconnected as shards moved, ${figures.missing} never started, ended: ${
        figures.failed.join(", ") || "all end_turn"
      }); all read in ${figures.seconds.toFixed(1)} s; runners' CPU ${figures.cpuUsPerChunk.toFixed(0)} µs per chunk, peak RSS ${figures.peakRssMb.toFixed(0)} MB (largest runner)`
    })
  }
  return rows
})
