/**
 * `idle-conversations`: the memory each idle conversation leaves behind in `baton serve` over SQLite.
 * Conversations are created and sent one message each (the loopback model answers with one delta),
 * CONCURRENCY at a time, and left idle past the server's passivation time (`--passivation`, short
 * here so the run does not wait 30 s at each checkpoint). At each checkpoint the server collects
 * garbage and reports its RSS (/proc/self/status VmRSS) and V8 heap (the memory.cjs preload). The
 * row is the RSS slope from the first checkpoint after a 3,000-conversation warm-up to the last, in
 * bytes per conversation: a least-squares fit over ten checkpoints. Each checkpoint takes the least
 * of three reports a second apart: the first, just after a burst of work, is often tens of
 * megabytes higher (memory freed but not yet returned), the next ones agree to within a megabyte.
 * The heap row is what is still referenced. Passivated, a conversation should leave nothing in
 * memory but what the store holds on disk. Two bounded things grow early and then stop, which the
 * warm-up absorbs: SQLite's page cache (16 MB, the better-sqlite3 build's default; a conversation
 * with the default system prompt is ~6 KB of file, so it fills within ~2,600 conversations) and
 * V8's optimized code as more paths get hot.
 * BENCH_IDLE_MAX (default 10,000: a conversation costs the server ~35 ms of CPU, so 100,000 is about
 * an hour) is the last checkpoint, the first a tenth of it; BENCH_IDLE_MAX=100000 is the
 * 10,000 → 100,000 span. Each checkpoint is printed on stderr as it is taken.
 */
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { bin, loopbackProcess, serveFlags } from "./conversations.js"
import { spawnMeasured, tempDir } from "./support/Child.js"
import { processCpuMs } from "./sendCost.js"
import type { Row } from "./support/Table.js"

const MAX = Number(process.env["BENCH_IDLE_MAX"] ?? 10_000)
/** Past the fill of SQLite's page cache (below), which would otherwise read as memory per conversation. */
const WARM = 3_000
const CONCURRENCY = 50
const PASSIVATION_MS = 1_000
const READINGS = 3
/** Ten, a tenth of MAX apart: the fit over all of them steadies a figure each sample moves by megabytes. */
const CHECKPOINTS = Array.from({ length: 10 }, (_, i) => Math.round((MAX * (i + 1)) / 10))
const memoryPreload = Path.join(import.meta.dirname, "support", "memory.cjs")

interface Sample {
  readonly conversations: number
  readonly rssKb: number
  readonly heapUsed: number
}

const server = (baseUrl: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const home = tempDir("idle")
      const memoryFile = Path.join(home, "memory.json")
      const running = spawnMeasured(["--expose-gc", "--require", memoryPreload, ...serveFlags, bin, "serve", "--port", "0", "--home", home, "--passivation", String(PASSIVATION_MS)], {
        env: { BATON_PROVIDER: "openai-chat", BATON_MODEL: "bench", BATON_BASE_URL: baseUrl, BENCH_MEMORY_FILE: memoryFile }
      })
      const [, url] = await running.waitFor(/baton serve: (http:\/\/\S+)/)
      return { url: url!, home, memoryFile, pid: running.child.pid!, stop: () => (running.child.kill("SIGTERM"), running.exited) }
    }),
    (s) => Effect.promise(() => s.stop().then(() => Fs.rmSync(s.home, { recursive: true, force: true })))
  )

type Server = Effect.Effect.Success<ReturnType<typeof server>>

/**
 * Once more on a connection reset: a pooled keep-alive connection the server closed as it was
 * reused. Both calls may be made twice: a second conversation is one more idle one, and the send's
 * otid makes a second send the same run.
 */
const retried = async <A>(call: () => Promise<A>): Promise<A> => {
  try {
    return await call()
  } catch (e) {
    if (!(e instanceof TypeError)) throw e
    return await call()
  }
}

/** One conversation: created, sent one message, its stream read to its end. */
const converse = async (base: string, n: number) => {
  const { id } = await retried(() => fetch(`${base}/v1/conversations`, { method: "POST" }).then((r) => r.json() as Promise<{ id: string }>))
  const { status, text } = await retried(async () => {
    const response = await fetch(`${base}/v1/conversations/${id}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ type: "user_message", content: `hello ${n}`, otid: `idle-${n}` }] })
    })
    return { status: response.status, text: await response.text() }
  })
  if (status !== 200 || !text.includes("end_turn")) throw new Error(`send ${n}: ${status} ${text.slice(0, 300)}`)
}

/** Conversations `from` to `to`, CONCURRENCY at a time. */
const converseRange = async (base: string, from: number, to: number) => {
  let next = from
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < to) await converse(base, next++)
  }))
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The server's memory after a full collection, as it reports it (memory.cjs). */
const report = async (s: Server) => {
  Fs.rmSync(s.memoryFile, { force: true })
  process.kill(s.pid, "SIGUSR2")
  for (let waited = 0; !Fs.existsSync(s.memoryFile); waited += 50) {
    if (waited > 120_000) throw new Error("the server never reported its memory")
    await sleep(50)
  }
  return JSON.parse(Fs.readFileSync(s.memoryFile, "utf8"))
}

/**
 * Idle past passivation, then the least of READINGS reports a second apart: the memory the
 * allocator kept from the last burst of work comes and goes, what conversations hold stays.
 */
const sample = async (s: Server, conversations: number): Promise<Sample> => {
  await sleep(PASSIVATION_MS * 2 + 500)
  const readings: Array<{ readonly rssKb: number; readonly heapUsed: number }> = []
  for (let i = 0; i < READINGS; i++) {
    if (i > 0) await sleep(1_000)
    readings.push(await report(s))
  }
  process.stderr.write(`idle-conversations: ${conversations} → ${JSON.stringify(readings)}\n`)
  return { conversations, rssKb: Math.min(...readings.map((r) => r.rssKb)), heapUsed: Math.min(...readings.map((r) => r.heapUsed)) }
}

/** The least-squares slope of y over x. */
const slope = (points: ReadonlyArray<readonly [number, number]>): number => {
  const mx = points.reduce((a, [x]) => a + x, 0) / points.length
  const my = points.reduce((a, [, y]) => a + y, 0) / points.length
  const sxy = points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0)
  const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0)
  return sxy / sxx
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KB`

export const idleConversationRows: Effect.Effect<ReadonlyArray<Row>> = Effect.gen(function*() {
  const model = yield* loopbackProcess({ paceMs: 0, deltas: 1 })
  const s = yield* server(model.baseUrl)
  return yield* Effect.promise(async () => {
    await converseRange(s.url, 0, WARM)
    const samples: Array<Sample> = [await sample(s, 0)]
    const cpuBefore = processCpuMs(s.pid)
    let done = 0
    for (const checkpoint of CHECKPOINTS) {
      await converseRange(s.url, WARM + done, WARM + checkpoint)
      done = checkpoint
      samples.push(await sample(s, checkpoint))
    }
    const cpuPer = (processCpuMs(s.pid) - cpuBefore) / MAX
    const first = samples[1]!
    const last = samples.at(-1)!
    const measured = samples.slice(1)
    const rssSlope = slope(measured.map((x) => [x.conversations, x.rssKb * 1024]))
    const heapSlope = slope(measured.map((x) => [x.conversations, x.heapUsed]))
    const n = (c: number) => c.toLocaleString("en")
    const rows: ReadonlyArray<Row> = [
      {
        figure: `idle-conversations: RSS per idle conversation, ${n(first.conversations)} → ${n(last.conversations)} (after ${n(WARM)} warm-up, ${CONCURRENCY} at a time)`,
        value: rssSlope,
        unit: "B",
        target: "≤ 1 KB",
        met: rssSlope <= 1024,
        note: `RSS after a full GC (least of ${READINGS} reports a second apart), ${samples.map((x) => `${n(x.conversations)}: ${(x.rssKb / 1024).toFixed(1)} MB`).join(", ")}; passivation ${PASSIVATION_MS} ms; ${cpuPer.toFixed(1)} ms server CPU per conversation (create + one send)`
      },
      {
        figure: "idle-conversations: V8 heap per idle conversation",
        value: heapSlope,
        unit: "B",
        note: `heap used after a full GC, ${samples.map((x) => `${n(x.conversations)}: ${kb(x.heapUsed)}`).join(", ")}`
      }
    ]
    return rows
  })
}).pipe(Effect.scoped)
