/**
 * The `conversations-1000` load of conversations.ts on a cluster: `baton serve --cluster` runners
 * on one PostgreSQL (BENCH_DATABASE_URL, else BATON_TEST_DATABASE_URL — `scripts/with-postgres.sh
 * npm run bench -- cluster`), 3 runners against 1. Conversation i is created and streamed through
 * runner i mod N with the remote client, so most commands are routed to another runner's shard and
 * most streams follow a run owned elsewhere (the Store, woken by LISTEN/NOTIFY). "Persisted per
 * second" is read from the database: every run's last seq over the window its runs span.
 * - `cluster-cpu`: a runner's CPU per chunk at that load against one `baton serve` over SQLite at
 *   the same load (conversations.ts's figure from this run, else measured here), and its peak RSS;
 * - `cluster-scale`: 1 and 3 runners, each in a cgroup of its own held to 0.3 CPU (root, cgroup v1),
 *   the model, PostgreSQL and the readers outside them, under a load that saturates the runners.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Chunk, Context, Duration, Effect, Layer, Option, Redacted, Stream } from "effect"
import * as Fs from "node:fs"
import { type ConversationId, Otid } from "../src/domain/Ids.js"
import { Backend } from "../src/services/Backend.js"
import { layerRemote } from "../src/services/backend/Remote.js"
import { layer as layerPg } from "../src/services/store/Pg.js"
import { Store } from "../src/services/Store.js"
import { bin, converse, CONVERSATIONS, DELTAS, loopbackProcess, measured, scenario as serveScenario, serveFlags } from "./conversations.js"
import * as Cgroup from "./support/Cgroup.js"
import { type Measured, spawnMeasured, tempDir } from "./support/Child.js"
import { againstFloor, type Row } from "./support/Table.js"

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

interface Load {
  readonly conversations: number
  readonly deltas: number
  readonly paceMs: number
  /** Each runner held to this share of one CPU in a cgroup of its own. */
  readonly cpus?: number
}

// Below Linux's ephemeral range (32768–60999): a port there can be held by any outgoing connection
// (one to PostgreSQL, say) at the moment a runner binds it.
const RUNNER_PORT = 24_400

const runner = (url: string, baseUrl: string, i: number, cpus?: number) =>
  Effect.gen(function*() {
    const group = cpus === undefined ? undefined : yield* Cgroup.quota(`runner-${i}`, cpus)
    return yield* Effect.acquireRelease(
      Effect.promise(async () => {
        const home = tempDir(`runner-${i}`)
        const running = spawnMeasured([...serveFlags, bin, "serve", "--port", "0", "--home", home, "--database", url, "--cluster", "--runner-port", String(RUNNER_PORT + i)], {
          env: { BATON_PROVIDER: "openai-chat", BATON_MODEL: "bench", BATON_BASE_URL: baseUrl }
        })
        // In its group before it has loaded its modules: start-up is under the quota too.
        group?.enter(running.child.pid!)
        const [, address] = await running.waitFor(/baton serve: (http:\/\/\S+)/)
        let stopped: Promise<Measured> | undefined
        return { url: address!, home, stop: () => (stopped ??= (running.child.kill("SIGTERM"), running.exited)) }
      }),
      (r) => Effect.promise(() => r.stop().then(() => Fs.rmSync(r.home, { recursive: true, force: true })))
    )
  })

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

const scenario = (database: string, runners: number, load: Load) =>
  Effect.gen(function*() {
    const url = yield* freshSchema(database)
    const model = yield* loopbackProcess({ paceMs: load.paceMs, deltas: load.deltas })
    const started = yield* Effect.all(Array.from({ length: runners }, (_, i) => runner(url, model.baseUrl, i, load.cpus)), { concurrency: "unbounded" })
    yield* settled(started.map((r) => r.url))
    const backends = yield* Effect.forEach(started, (r) => Effect.map(Layer.build(layerRemote({ url: r.url })), (ctx) => Context.get(ctx, Backend)))
    const ids = yield* Effect.forEach(
      Array.from({ length: load.conversations }, (_, i) => i),
      (i) => Effect.map(backends[i % runners]!.createConversation({}), (c) => c.id),
      { concurrency: 50 }
    )
    const delays: Array<number> = []
    const began = performance.now()
    // A stream that never ends is an error of the run, not a bench that never ends.
    const patience = Duration.seconds(Number(process.env["BENCH_STREAM_TIMEOUT_S"] ?? 900))
    const outcomes = yield* Effect.forEach(ids, (id, i) =>
      converse(backends[i % runners]!, id, delays).pipe(
        Effect.timeoutTo({ duration: patience, onSuccess: (o) => o, onTimeout: () => ({ chunks: 0, deltas: 0, ok: false, error: "no end within the time allowed" }) })
      ), { concurrency: "unbounded" })
    const seconds = (performance.now() - began) / 1000
    // Stopped here (the scope would too) to read what each runner used.
    const usage = yield* Effect.promise(() => Promise.all(started.map((r) => r.stop())))
    const stored = yield* persisted(url, ids)
    // A run that reconnected as its shard moved streams its partial answer, then the whole answer again.
    const failed = outcomes.filter((o) => !o.ok || o.deltas < load.deltas)
    for (const o of failed) {
      process.stderr.write(`bench cluster: a stream read ${o.deltas} deltas, ${o.chunks} chunks${o.error !== undefined ? `: ${o.error}` : ""}\n`)
    }
    return {
      ...stored,
      seconds,
      errors: failed.length,
      chunksPerSecond: stored.chunks / stored.seconds,
      cpuUsPerChunk: (usage.reduce((n, u) => n + u.cpuMs, 0) * 1000) / stored.chunks,
      peakRssMb: Math.max(...usage.map((u) => u.maxRssMb))
    }
  }).pipe(Effect.scoped, Effect.orDie)

type Figures = Effect.Effect.Success<ReturnType<typeof scenario>>

const outcome = (f: Figures) =>
  `${f.errors} errors (${f.reconnected} runs reconnected as shards moved, ${f.missing} never started, ended: ${
    f.failed.join(", ") || "all end_turn"
  }); all read in ${f.seconds.toFixed(1)} s`

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

/**
 * `cluster-scale`'s load: conversations streaming unpaced, so the runners held to their quota are the
 * bottleneck at every count of runners (the model, PostgreSQL and the readers run outside the quotas);
 * 500 deltas a run as in conversations-1000, so a send's own cost does not swamp the chunks' (at 20
 * deltas a run, 3.6 ms of CPU per chunk), and few enough runs that one runner at 0.3 CPU is done in
 * about a minute.
 */
const scaleLoad = (cpus: number): Load => ({
  conversations: Number(process.env["BENCH_SCALE_CONVERSATIONS"] ?? 60),
  deltas: Number(process.env["BENCH_SCALE_DELTAS"] ?? 500),
  paceMs: 0,
  cpus
})

/** The serve figure conversations.ts measured in this run, or measured now (the section ran alone). */
const servePaced = Effect.suspend(() => {
  const known = measured.get("serve-paced")
  return known !== undefined ? Effect.succeed(known) : serveScenario("serve-paced", 20, "serve")
})

export const clusterRows: Effect.Effect<ReadonlyArray<Row>> = Effect.gen(function*() {
  const n = CONVERSATIONS.toLocaleString("en")
  if (DATABASE === undefined || DATABASE === "") {
    return [{ figure: "conversations-1000 on a cluster", value: Number.NaN, unit: "", note: "skipped: set BENCH_DATABASE_URL (or run under scripts/with-postgres.sh)" }]
  }
  const rows: Array<Row> = []
  // BENCH_CLUSTER=scale (or cpu) runs one of the two parts alone.
  const parts = (process.env["BENCH_CLUSTER"] ?? "cpu,scale").split(",")
  const paced: Load = { conversations: CONVERSATIONS, deltas: DELTAS, paceMs: 20 }
  const counts = parts.includes("cpu") ? (process.env["BENCH_RUNNERS"] ?? "1,3").split(",").map(Number) : []
  const byCount = new Map<number, Figures>()
  for (const runners of counts) {
    const figures = yield* scenario(DATABASE, runners, paced)
    byCount.set(runners, figures)
    rows.push({
      figure: `conversations-1000 (serve --cluster, ${runners} runner${runners === 1 ? "" : "s"}, PostgreSQL): chunks persisted/s, ${n} × ${DELTAS} deltas 20 ms apart`,
      value: figures.chunksPerSecond,
      unit: "chunks/s",
      note: `${outcome(figures)}; runners' CPU ${figures.cpuUsPerChunk.toFixed(0)} µs per chunk, peak RSS ${figures.peakRssMb.toFixed(0)} MB (largest runner)`
    })
  }
  const one = byCount.get(1)
  if (one !== undefined) {
    const serve = yield* servePaced
    const peak = Math.max(...[...byCount.values()].map((f) => f.peakRssMb))
    rows.push(
      againstFloor(
        `cluster-cpu: runner CPU per chunk, 1 runner, conversations-1000 load`,
        one.cpuUsPerChunk,
        "µs",
        { value: serve.cpuUsPerChunk, label: "`baton serve` over SQLite, same load" },
        1.5
      ),
      {
        figure: "cluster-cpu: peak RSS of a runner, conversations-1000 load",
        value: peak,
        unit: "MB",
        target: "≤ 1,024 MB",
        met: peak <= 1024,
        note: counts.map((c) => `${c} runner${c === 1 ? "" : "s"}: ${byCount.get(c)!.peakRssMb.toFixed(0)} MB`).join(", ")
      }
    )
  }
  if (parts.includes("scale")) rows.push(...(yield* scaleRows(DATABASE)))
  return rows
})

const scaleRows = (database: string) =>
  Effect.gen(function*() {
    const figure = "cluster-scale: chunks persisted/s, 3 runners at 0.3 CPU each"
    const why = Cgroup.unavailable()
    if (why !== undefined) return [{ figure, value: Number.NaN, unit: "", note: `skipped: ${why}` }] satisfies Array<Row>
    const load = scaleLoad(0.3)
    const one = yield* scenario(database, 1, load)
    const three = yield* scenario(database, 3, load)
    const note = (f: Figures) => `${outcome(f)}; ${f.cpuUsPerChunk.toFixed(0)} µs CPU per chunk`
    const rows: Array<Row> = [
      { figure: "cluster-scale: chunks persisted/s, 1 runner at 0.3 CPU", value: one.chunksPerSecond, unit: "chunks/s", note: `${load.conversations} × ${load.deltas} deltas, unpaced; ${note(one)}` },
      {
        figure,
        value: three.chunksPerSecond,
        unit: "chunks/s",
        floor: { value: one.chunksPerSecond, label: "1 runner at 0.3 CPU" },
        target: "≥ 2.5× floor",
        met: three.chunksPerSecond >= 2.5 * one.chunksPerSecond,
        note: note(three)
      }
    ]
    return rows
  })
