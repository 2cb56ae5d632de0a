/**
 * `send-cost`: what one send costs `baton serve` over SQLite, the model a loopback server answering
 * every request with one short delta (the HTTP provider path users run). The server's CPU comes from
 * /proc/<pid>/stat (user + system ticks), so it is the server's own, whatever else runs on the
 * machine; wall-clock figures are not, and move with the machine's load.
 * - CPU per send: 50 sequential sends after 10 warm-ups, on a fresh conversation;
 * - a lone send → its first SSE event, against a bare Node HTTP round trip to the same server's
 *   /healthz (both on a fresh connection, as a send's stream closes its own);
 * - growth: CPU per send on conversations of 10, 1,000 and 10,000 items of history (recorded in the
 *   store before the server starts), as µs per item. The request body is as long as the context;
 *   reading and decoding the whole history again for every send is not what it should cost.
 */
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import type { NewItem } from "../src/domain/History.js"
import { type ConversationId, Otid } from "../src/domain/Ids.js"
import { Store } from "../src/services/Store.js"
import { layerSqlite } from "../src/services/store/Sqlite.js"
import { median, spawnMeasured, tempDir } from "./support/Child.js"
import * as LoopbackModel from "./support/LoopbackModel.js"
import { againstFloor, type Row } from "./support/Table.js"

const root = Path.join(import.meta.dirname, "..")
const bin = process.env["BENCH_BIN"] ?? Path.join(root, "dist", "bin", "baton.js")
/** Extra node flags for the server, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`. */
const serveFlags = (process.env["BENCH_SERVE_FLAGS"] ?? "").split(" ").filter((f) => f !== "")

const WARM = 10
const SENDS = 50
const SIZES = [10, 1_000, 10_000] as const
const GROWTH_SENDS = 20
const GROWTH_ROUNDS = 4

/** The process's CPU time so far (user + system), from its /proc stat line, in ms. */
export const processCpuMs = (pid: number): number => {
  const fields = Fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  // utime and stime are fields 14 and 15 of the line, in clock ticks (100 a second on Linux).
  return (Number(fields[11]) + Number(fields[12])) * 10
}

interface Response {
  readonly status: number
  readonly body: string
  /** ms from the request's start to its first body byte, and to its end. */
  readonly first: number
  readonly total: number
}

/** One request on a fresh connection. */
const request = (url: string, method: string, body?: unknown) =>
  new Promise<Response>((resolve, reject) => {
    const t0 = performance.now()
    let first: number | undefined
    const req = Http.request(url, { method, agent: false, headers: { "content-type": "application/json" } }, (res) => {
      const pieces: Array<Buffer> = []
      res.on("data", (piece: Buffer) => {
        first ??= performance.now() - t0
        pieces.push(piece)
      })
      res.on("end", () => {
        const now = performance.now() - t0
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(pieces).toString("utf8"), first: first ?? now, total: now })
      })
    })
    req.on("error", reject)
    if (body !== undefined) req.write(JSON.stringify(body))
    req.end()
  })

/** `pairs` user/assistant exchanges, as earlier turns leave them. */
const history = (pairs: number): ReadonlyArray<NewItem> =>
  Array.from({ length: pairs }, (_, i): ReadonlyArray<NewItem> => [
    { item: { type: "user_message", content: `question ${i}: what does line ${i} say?`, otid: Otid.make(`h-${i}`) } },
    { item: { type: "assistant_message", content: `Line ${i} says what it said before, in a few more words.` } }
  ]).flat()

/** Conversations with this many items of history, written to the home's store before the server opens it. */
const seed = (file: string, sizes: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const store = yield* Store
    return yield* Effect.forEach(sizes, (items) =>
      Effect.gen(function*() {
        // No compaction: it would shrink the context these conversations are here to have.
        const conversation = yield* store.createConversation({ compaction: { maxContextLength: 0, contextWindow: 1_000_000_000 } })
        if (items > 0) yield* store.commit({ conversationId: conversation.id, items: history(items / 2) })
        return conversation.id
      }))
  }).pipe(Effect.provide(layerSqlite({ filename: file })), Effect.scoped, Effect.orDie)

const serve = (home: string, baseUrl: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const running = spawnMeasured([...serveFlags, bin, "serve", "--port", "0", "--home", home], {
        env: { BATON_PROVIDER: "openai-chat", BATON_MODEL: "bench", BATON_BASE_URL: baseUrl }
      })
      const [, url] = await running.waitFor(/baton serve: (http:\/\/\S+)/)
      return { url: url!, pid: running.child.pid!, stop: () => (running.child.kill("SIGTERM"), running.exited) }
    }),
    (server) => Effect.promise(server.stop)
  )

export const sendCostRows = Effect.gen(function*() {
  const model = yield* Effect.acquireRelease(
    Effect.promise(() => LoopbackModel.start({ wire: "openai-chat", deltas: ["ok"] })),
    (m) => Effect.promise(m.close)
  )
  const home = yield* Effect.acquireRelease(Effect.sync(() => tempDir("send-cost")), (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true })))
  const seeded = yield* seed(Path.join(home, "baton.db"), SIZES)
  const server = yield* serve(home, model.baseUrl)

  let sent = 0
  const send = (id: ConversationId) =>
    Effect.promise(async () => {
      const response = await request(`${server.url}/v1/conversations/${id}/messages`, "POST", {
        messages: [{ type: "user_message", content: `hi ${sent}`, otid: `send-${++sent}` }]
      })
      if (response.status !== 200 || !response.body.includes("end_turn")) {
        throw new Error(`send: ${response.status} ${response.body.slice(0, 500)}`)
      }
      return response
    })
  const cpuPerSend = (id: ConversationId, n: number) =>
    Effect.gen(function*() {
      const before = processCpuMs(server.pid)
      const responses: Array<Response> = []
      for (let i = 0; i < n; i++) responses.push(yield* send(id))
      return { cpuMs: (processCpuMs(server.pid) - before) / n, responses }
    })

  const created = yield* Effect.promise(() => request(`${server.url}/v1/conversations`, "POST", {}))
  const fresh = JSON.parse(created.body).id as ConversationId
  for (let i = 0; i < WARM; i++) yield* send(fresh)
  const steady = yield* cpuPerSend(fresh, SENDS)
  const firstEvent = median(steady.responses.map((r) => r.first))
  const healthz: Array<number> = []
  for (let i = 0; i < SENDS; i++) healthz.push((yield* Effect.promise(() => request(`${server.url}/healthz`, "GET"))).total)
  const floor = median(healthz)

  // Round robin over the sizes, so the server's warming up (its JIT) weighs on each size alike.
  for (const id of seeded) for (let i = 0; i < 3; i++) yield* send(id)
  const spent = SIZES.map(() => 0)
  for (let round = 0; round < GROWTH_ROUNDS; round++) {
    for (const [i, id] of seeded.entries()) spent[i]! += (yield* cpuPerSend(id, GROWTH_SENDS / GROWTH_ROUNDS)).cpuMs / GROWTH_ROUNDS
  }
  const growth = spent
  const perItemUs = ((growth[2]! - growth[0]!) * 1000) / (SIZES[2] - SIZES[0])

  const rows: ReadonlyArray<Row> = [
    {
      figure: "send-cost: `baton serve` CPU per send (SQLite, HTTP model, one delta)",
      value: steady.cpuMs,
      unit: "ms",
      target: "≤ 2 ms",
      met: steady.cpuMs <= 2,
      note: `${SENDS} sequential sends after ${WARM} warm-ups; /proc/<pid>/stat; median send ${median(steady.responses.map((r) => r.total)).toFixed(1)} ms to its end`
    },
    {
      figure: "send-cost: `baton serve` CPU per send, warmed (10 items of history)",
      value: growth[0]!,
      unit: "ms",
      target: "≤ 2 ms",
      met: growth[0]! <= 2,
      note: `after ${WARM + SENDS + 3 * SIZES.length} sends and between the others below: the figure above still pays for V8 compiling the hot path`
    },
    {
      ...againstFloor("send-cost: lone send → first event", firstEvent, "ms", { value: floor, label: "bare Node GET /healthz" }, 5),
      note: "medians, each request on a fresh connection; wall clock, so it moves with the machine's load"
    },
    {
      figure: "send-cost: server CPU growth per item of history",
      value: perItemUs,
      unit: "µs",
      target: "≤ 2 µs",
      met: perItemUs <= 2,
      note: `CPU per send at ${SIZES.map((n, i) => `${n.toLocaleString("en")} items ${growth[i]!.toFixed(1)} ms`).join(", ")}`
    }
  ]
  return rows
}).pipe(Effect.scoped)
