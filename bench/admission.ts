/**
 * `admission-1000`: `baton serve --database` on PostgreSQL one (simulated) network hop away — a
 * loopback proxy holding each packet 1 ms each way, counting the server's packets to the database —
 * with a model answering each request with one delta. 1,000 conversations, then two lone sends, then
 * 1,000 sends at once, each timed from its request to its first SSE event and read to its end.
 * What it shows: the server's CPU per send, the database round trips per send, and whether sends
 * wait only for the CPU (p99 against the burst's CPU time plus two lone sends), never for each other.
 * BENCH_DATABASE_URL, else BATON_TEST_DATABASE_URL (`scripts/with-postgres.sh npm run bench -- admission`).
 */
import { Effect } from "effect"
import * as Fs from "node:fs"
import { freshSchema } from "./cluster.js"
import { bin, loopbackProcess, serveFlags } from "./conversations.js"
import { percentile, spawnMeasured, tempDir } from "./support/Child.js"
import { delayProxy } from "./support/DelayProxy.js"
import type { Row } from "./support/Table.js"

const DATABASE = process.env["BENCH_DATABASE_URL"] ?? process.env["BATON_TEST_DATABASE_URL"]
const SENDS = Number(process.env["BENCH_ADMISSION_SENDS"] ?? 1000)

/** The server's CPU time so far (user + system), from /proc: sampled around the burst alone. */
const cpuMsOf = (pid: number): number => {
  const fields = Fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

const server = (url: string, baseUrl: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const home = tempDir("admission")
      const running = spawnMeasured([...serveFlags, bin, "serve", "--port", "0", "--home", home, "--database", url], {
        env: { BATON_PROVIDER: "openai-chat", BATON_MODEL: "bench", BATON_BASE_URL: baseUrl }
      })
      const [, address] = await running.waitFor(/baton serve: (http:\/\/\S+)/)
      return { url: address!, home, pid: running.child.pid!, stop: () => (running.child.kill("SIGTERM"), running.exited) }
    }),
    (s) => Effect.promise(() => s.stop().then(() => Fs.rmSync(s.home, { recursive: true, force: true })))
  )

/** One send: the time to its first event, and whether its stream ended with end_turn. */
const send = async (base: string, id: string, otid: string) => {
  const began = performance.now()
  const response = await fetch(`${base}/v1/conversations/${id}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ type: "user_message", content: "go", otid }] })
  })
  if (response.status !== 200 || response.body === null) return { firstMs: Number.NaN, ok: false }
  let firstMs = Number.NaN
  let text = ""
  const decoder = new TextDecoder()
  for await (const bytes of response.body) {
    if (Number.isNaN(firstMs)) firstMs = performance.now() - began
    text += decoder.decode(bytes as Uint8Array, { stream: true })
  }
  return { firstMs, ok: text.includes("\"stop_reason\"") && text.includes("end_turn") }
}

const scenario = (database: string) =>
  Effect.gen(function*() {
    const schemaUrl = new URL(yield* freshSchema(database))
    const proxy = yield* delayProxy({ host: schemaUrl.hostname, port: Number(schemaUrl.port) }, 1)
    schemaUrl.hostname = "127.0.0.1"
    schemaUrl.port = String(proxy.port)
    const model = yield* loopbackProcess({ paceMs: 0, deltas: 1 })
    const serve = yield* server(schemaUrl.toString(), model.baseUrl)
    return yield* Effect.promise(async () => {
      const ids: Array<string> = []
      for (let i = 0; i < SENDS + 2; i += 50) {
        const made = await Promise.all(Array.from({ length: Math.min(50, SENDS + 2 - i) }, () =>
          fetch(`${serve.url}/v1/conversations`, { method: "POST" }).then((r) => r.json() as Promise<{ id: string }>)))
        ids.push(...made.map((c) => c.id))
      }
      const lone = [await send(serve.url, ids[0]!, "lone-0"), await send(serve.url, ids[1]!, "lone-1")]
      const cpuBefore = cpuMsOf(serve.pid)
      const packetsBefore = proxy.sent()
      const began = performance.now()
      const burst = await Promise.all(ids.slice(2).map((id, i) => send(serve.url, id, `burst-${i}`)))
      const wallMs = performance.now() - began
      const cpuMs = cpuMsOf(serve.pid) - cpuBefore
      const packets = proxy.sent() - packetsBefore
      const firsts = burst.map((b) => b.firstMs).filter((ms) => !Number.isNaN(ms)).sort((a, b) => a - b)
      return {
        loneMs: lone.reduce((n, l) => n + l.firstMs, 0),
        cpuMs,
        wallMs,
        packets,
        p50: percentile(firsts, 50),
        p99: percentile(firsts, 99),
        errors: burst.filter((b) => !b.ok).length + lone.filter((l) => !l.ok).length
      }
    })
  }).pipe(Effect.scoped, Effect.orDie)

export const admissionRows: Effect.Effect<ReadonlyArray<Row>> = Effect.gen(function*() {
  if (DATABASE === undefined || DATABASE === "") {
    return [{ figure: "admission-1000", value: Number.NaN, unit: "", note: "skipped: set BENCH_DATABASE_URL (or run under scripts/with-postgres.sh)" }]
  }
  const f = yield* scenario(DATABASE)
  const n = SENDS.toLocaleString("en")
  const budget = f.cpuMs + f.loneMs
  const note = `${f.errors} errors; the burst took ${(f.wallMs / 1000).toFixed(1)} s, ${(f.cpuMs / 1000).toFixed(1)} s of server CPU; p50 ${(f.p50 / 1000).toFixed(2)} s; two lone sends ${f.loneMs.toFixed(0)} ms`
  return [
    { figure: `admission-1000: server CPU per send (${n} sends at once, PostgreSQL 1 ms away)`, value: f.cpuMs / SENDS, unit: "ms", target: "≤ 3 ms", met: f.cpuMs / SENDS <= 3, note },
    { figure: "admission-1000: database round trips per send (packets to the database)", value: f.packets / SENDS, unit: "", target: "≤ 8", met: f.packets / SENDS <= 8 },
    {
      figure: "admission-1000: p99 send → first event",
      value: f.p99,
      unit: "ms",
      floor: { value: budget, label: "burst CPU + two lone sends" },
      target: "≤ 1.5× floor",
      met: f.p99 <= 1.5 * budget && f.errors === 0
    }
  ]
})
