/**
 * Many conversations in one `baton serve` process over SQLite. The model is a loopback process
 * (LoopbackMain) whose deltas carry the time they were written; this process drives every
 * conversation at once through the remote client (`BackendRemote`), so each delta travels model →
 * server (decode, commit, publish) → SSE → client, and its delay is measured end to end.
 * - `conversations-1000`: 1,000 conversations, 500 deltas each, 20 ms apart (a model's pace);
 * - `conversations-burst`: the same with no pacing.
 * Both twice: against `baton serve` (the remote client in this process reads every stream over
 * SSE, on the same two cores) and with the local Backend in this process (its streams read here).
 * "Persisted per second" comes from the store file itself, so it does not depend on the readers.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { Context, Effect, Exit, Layer, Option, Scope, Stream } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Readline from "node:readline"
import type { Chunk as RunChunk } from "../src/domain/Events.js"
import { type ConversationId, Otid } from "../src/domain/Ids.js"
import { Backend } from "../src/services/Backend.js"
import { layerLocal } from "../src/programs/backend/BackendLocal.js"
import { layerRemote } from "../src/services/backend/Remote.js"
import * as ProviderOpenAiChat from "../src/services/provider/OpenAiChat.js"
import { Store } from "../src/services/Store.js"
import { layerSqlite } from "../src/services/store/Sqlite.js"
import { type Measured, percentile, spawnMeasured, tempDir } from "./support/Child.js"
import { epochMs, stampsOf } from "./support/LoopbackModel.js"
import type { Row } from "./support/Table.js"

const root = Path.join(import.meta.dirname, "..")
export const bin = process.env["BENCH_BIN"] ?? Path.join(root, "dist", "bin", "baton.js")
/** Extra node flags for the server, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to see where its time goes. */
export const serveFlags = (process.env["BENCH_SERVE_FLAGS"] ?? "").split(" ").filter((f) => f !== "")
const loopbackMain = Path.join(import.meta.dirname, "support", "LoopbackMain.ts")

export const CONVERSATIONS = Number(process.env["BENCH_CONVERSATIONS"] ?? 1000)
export const DELTAS = 500

/** The loopback model in a process of its own; closed with the scope. */
export const loopbackProcess = (options: { readonly paceMs: number; readonly deltas?: number }) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ readonly baseUrl: string; readonly close: () => Promise<void> }>((resolve, reject) => {
        const child = spawn(process.execPath, [
          "--import",
          "tsx",
          loopbackMain,
          JSON.stringify({ wire: "openai-chat", count: options.deltas ?? DELTAS, paceMs: options.paceMs, stamp: true })
        ], { stdio: ["pipe", "pipe", "inherit"], cwd: root })
        child.on("error", reject)
        Readline.createInterface({ input: child.stdout! }).once("line", (line) => {
          const closed = new Promise<void>((done) => child.once("close", () => done()))
          resolve({ baseUrl: JSON.parse(line).baseUrl, close: () => (child.stdin!.end(), closed) })
        })
      })
    ),
    (model) => Effect.promise(model.close)
  )

/** `baton serve` on a free port over a fresh home; SIGTERM at the end of the scope yields its usage. */
const serveProcess = (baseUrl: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const home = tempDir("serve")
      const running = spawnMeasured([...serveFlags, bin, "serve", "--port", "0", "--home", home], {
        env: { BATON_PROVIDER: "openai-chat", BATON_MODEL: "bench", BATON_BASE_URL: baseUrl }
      })
      const [, url] = await running.waitFor(/baton serve: (http:\/\/\S+)/)
      let stopped: Promise<Measured> | undefined
      const stop = () => (stopped ??= (running.child.kill("SIGTERM"), running.exited))
      return { url: url!, stop, store: Path.join(home, "baton.db"), home }
    }),
    (server) => Effect.promise(() => server.stop().then(() => Fs.rmSync(server.home, { recursive: true, force: true })))
  )

/**
 * What the server persisted, read from its SQLite file once it has stopped: every run's last seq, and
 * the window from the first run's start to the last run's end (stamped at commit), so the rate does
 * not depend on how fast this process read the streams.
 */
const persisted = (file: string, conversations: ReadonlyArray<ConversationId>) =>
  Effect.gen(function*() {
    const store = yield* Store
    const runs = yield* Effect.forEach(conversations, (id) => store.runByOtid(id, Otid.make(`go-${id}`)))
    const found = runs.flatMap((r) => (Option.isSome(r) ? [r.value] : []))
    const chunks = found.reduce((n, r) => n + r.lastSeq, 0)
    const window = Math.max(...found.map((r) => r.updatedAt)) - Math.min(...found.map((r) => r.createdAt))
    return { chunks, seconds: window / 1000 }
  }).pipe(Effect.provide(layerSqlite({ filename: file })), Effect.scoped)

interface Outcome {
  readonly chunks: number
  readonly deltas: number
  readonly ok: boolean
  /** Why the stream failed, when it did. */
  readonly error?: string
}

/** One conversation: sent, read to its stop reason; every delta's delay recorded in `delays`. */
export const converse = (backend: Backend["Type"], id: Parameters<Backend["Type"]["send"]>[0], delays: Array<number>) =>
  Effect.gen(function*() {
    let chunks = 0
    let deltas = 0
    let ok = false
    yield* backend.send(id, { messages: [{ type: "user_message", content: "go", otid: Otid.make(`go-${id}`) }] }).pipe(
      Stream.runForEachChunk((batch) =>
        Effect.sync(() => {
          const now = epochMs()
          for (const chunk of batch as Iterable<RunChunk>) {
            chunks = chunk.seq
            if (chunk.type === "text_delta") {
              for (const at of stampsOf(chunk.content)) {
                delays.push(now - at)
                deltas++
              }
            } else if (chunk.type === "stop_reason") ok = chunk.reason === "end_turn"
          }
        })
      )
    )
    const outcome: Outcome = { chunks, deltas, ok }
    return outcome
  }).pipe(Effect.catchAll((e) => Effect.succeed<Outcome>({ chunks: 0, deltas: 0, ok: false, error: `${e._tag}: ${e.message}` })))

/** Where the conversations live: what drives them, and (once they are done) what it cost. */
interface Host {
  readonly backend: Backend["Type"]
  /** Stops the host; its peak RSS and CPU time while it ran. */
  readonly stop: Effect.Effect<{ readonly rssMb: number; readonly cpuMs: number }>
  /** The SQLite file the conversations were persisted to (read once the host stopped). */
  readonly store: string
}

/** `baton serve` in a process of its own, driven through the remote client from this one. */
const served = (baseUrl: string) =>
  Effect.gen(function*() {
    const server = yield* serveProcess(baseUrl)
    const backend = Context.get(yield* Layer.build(layerRemote({ url: server.url })), Backend)
    return {
      backend,
      store: server.store,
      stop: Effect.map(Effect.promise(server.stop), (usage) => ({ rssMb: usage.maxRssMb, cpuMs: usage.cpuMs }))
    } satisfies Host
  })

/** The local backend in this process (SQLite, the live provider), its streams read in this process too. */
const inProcess = (baseUrl: string) =>
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(Effect.sync(() => tempDir("local")), (d) => Effect.sync(() => Fs.rmSync(d, { recursive: true, force: true })))
    const store = Path.join(dir, "baton.db")
    const scope = yield* Scope.make()
    const provider = ProviderOpenAiChat.layer({ model: "bench", baseUrl, apiKey: Option.none(), timeouts: { firstByteMs: 300_000, stallMs: 300_000 } }).pipe(
      Layer.provide(FetchHttpClient.layer)
    )
    const backend = Context.get(yield* Layer.buildWithScope(layerLocal().pipe(Layer.provide([layerSqlite({ filename: store }), provider])), scope), Backend)
    const cpu = process.cpuUsage()
    let peak = process.memoryUsage().rss
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50)
    const stop = Effect.gen(function*() {
      clearInterval(sampler)
      yield* Scope.close(scope, Exit.void)
      const used = process.cpuUsage(cpu)
      return { rssMb: peak / 2 ** 20, cpuMs: (used.user + used.system) / 1000 }
    })
    return { backend, store, stop } satisfies Host
  })

export const scenario = (label: string, paceMs: number, host: "serve" | "local") =>
  Effect.gen(function*() {
    const model = yield* loopbackProcess({ paceMs })
    const { backend, stop, store } = yield* (host === "serve" ? served(model.baseUrl) : inProcess(model.baseUrl))
    const conversations = yield* Effect.forEach(
      Array.from({ length: CONVERSATIONS }),
      () => Effect.map(backend.createConversation({}), (c) => c.id),
      { concurrency: 50 }
    )
    const delays: Array<number> = []
    const began = performance.now()
    const outcomes = yield* Effect.forEach(conversations, (id) => converse(backend, id, delays), { concurrency: "unbounded" })
    const seconds = (performance.now() - began) / 1000
    const usage = yield* stop
    const errors = outcomes.filter((o) => !o.ok || o.deltas !== DELTAS).length
    const stored = yield* persisted(store, conversations)
    const sorted = delays.sort((a, b) => a - b)
    return {
      label,
      seconds,
      errors,
      chunksPerSecond: stored.chunks / stored.seconds,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      rssMb: usage.rssMb,
      cpuUsPerChunk: (usage.cpuMs * 1000) / stored.chunks
    }
  }).pipe(Effect.scoped, Effect.orDie)

/**
 * BENCH_SCENARIOS picks some of serve-paced, serve-burst, local-paced, local-burst (to profile one);
 * a scenario left out shows n/a.
 */
const scenarios = (process.env["BENCH_SCENARIOS"] ?? "serve-paced,serve-burst,local-paced,local-burst").split(",")

type Figures = Effect.Effect.Success<ReturnType<typeof scenario>>

const skipped: Figures = {
  label: "",
  seconds: Number.NaN,
  errors: Number.NaN,
  chunksPerSecond: Number.NaN,
  p50: Number.NaN,
  p99: Number.NaN,
  rssMb: Number.NaN,
  cpuUsPerChunk: Number.NaN
}

/** Each scenario's figures once measured, for a later section to compare with (the cluster's). */
export const measured = new Map<string, Figures>()

const run = (name: string, paceMs: number, host: "serve" | "local") =>
  scenarios.includes(name) ? Effect.tap(scenario(name, paceMs, host), (f) => Effect.sync(() => measured.set(name, f))) : Effect.succeed(skipped)

export const conversationRows = Effect.gen(function*() {
  const rows: Array<Row> = []
  // In-process first, while this process is fresh: its peak RSS is the host's and the readers'.
  for (const host of ["local", "serve"] as const) {
    rows.push(...hostRows(host, yield* run(`${host}-paced`, 20, host), yield* run(`${host}-burst`, 0, host)))
  }
  return rows as ReadonlyArray<Row>
})

const hostRows = (host: "serve" | "local", paced: Figures, burst: Figures): ReadonlyArray<Row> => {
  const n = CONVERSATIONS.toLocaleString("en")
  const where = host === "serve" ? "`baton serve` + remote clients" : "in-process Backend"
  const who = host === "serve" ? "server" : "process"
  return [
    {
      figure: `conversations-1000 (${where}): chunks persisted/s, ${n} × ${DELTAS} deltas 20 ms apart`,
      value: paced.chunksPerSecond,
      unit: "chunks/s",
      note: `all read in ${paced.seconds.toFixed(1)} s; ${who} CPU ${paced.cpuUsPerChunk.toFixed(0)} µs per chunk`
    },
    { figure: `conversations-1000 (${where}): errors`, value: paced.errors, unit: "", target: "0", met: paced.errors === 0 },
    host === "serve"
      ? { figure: `conversations-1000 (${where}): server peak RSS`, value: paced.rssMb, unit: "MB", target: "≤ 600 MB", met: paced.rssMb <= 600 }
      : { figure: `conversations-1000 (${where}): peak RSS, host and readers together`, value: paced.rssMb, unit: "MB" },
    { figure: `conversations-1000 (${where}): delta → follower p50`, value: paced.p50, unit: "ms" },
    { figure: `conversations-1000 (${where}): delta → follower p99`, value: paced.p99, unit: "ms", target: "≤ 50 ms", met: paced.p99 <= 50 },
    {
      figure: `conversations-burst (${where}): chunks persisted/s, no pacing`,
      value: burst.chunksPerSecond,
      unit: "chunks/s",
      target: "≥ 50,000/s",
      met: burst.chunksPerSecond >= 50_000,
      note: `${burst.errors} errors; all read in ${burst.seconds.toFixed(1)} s; p99 delay ${burst.p99.toFixed(0)} ms; ${who} CPU ${
        burst.cpuUsPerChunk.toFixed(0)
      } µs per chunk; peak RSS ${burst.rssMb.toFixed(0)} MB`
    }
  ]
}
