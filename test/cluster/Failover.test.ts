import { assert, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Net from "node:net"
import * as Path from "node:path"
import { cliDirs, startServe } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { freshSchema, onPostgres } from "../support/pgDatabase.js"
import { eventually } from "../support/testing.js"

/**
 * The cluster's promise, with real parts: three `baton serve --cluster` processes on one PostgreSQL,
 * twenty conversations streaming, one runner killed with SIGKILL mid-run. Every stream is read by
 * the client from a runner that survives, as raw SSE bytes; the killed runner's runs must continue
 * on a new owner as a reconnect, and every stream end with contiguous seqs and one stop_reason.
 */

const CONVERSATIONS = 20
const LOCK_EXPIRATION_MS = 3_000
/** Far beyond the test's timeout: a handover that waited for the lock to expire would fail it. */
const LONG_LOCK_EXPIRATION_MS = 120_000
/** The first answers stream a few words, then hold until the runner is killed; a reconnect answers at once. */
const LONG = [...Array.from({ length: 40 }, (_, i) => `w${i} `), "done."]

interface Event {
  readonly id: string
  readonly chunk: { readonly type: string; readonly seq: number; readonly run_id: string; readonly [k: string]: unknown }
  readonly at: number
}

const freePort = Effect.async<number>((resume) => {
  const server = Net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

const json = (url: string, init?: RequestInit) =>
  Effect.promise(() => fetch(url, init).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> })))

/** POSTs one message and reads the run's SSE stream to its end, recording every event as it arrives. */
const sendAndRead = (base: string, conversationId: string, events: Array<Event>) =>
  Effect.promise(async () => {
    const response = await fetch(`${base}/v1/conversations/${conversationId}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ type: "user_message", content: "write a long answer", otid: `otid-${conversationId}` }] })
    })
    if (response.status !== 200 || response.body === null) throw new Error(`send answered ${response.status}: ${await response.text()}`)
    const decoder = new TextDecoder()
    let buffer = ""
    for await (const bytes of response.body) {
      buffer += decoder.decode(bytes as Uint8Array, { stream: true })
      let end: number
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const id = /^id: (.*)$/m.exec(block)?.[1]
        const data = /^data: (.*)$/m.exec(block)?.[1]
        if (id !== undefined && data !== undefined) events.push({ id, chunk: JSON.parse(data), at: Date.now() })
      }
    }
  })

/**
 * `count` runners of one cluster on a fresh schema, behind a model whose first answers hold after a
 * few words until `release`; answers once every runner holds its share of the 300 shards.
 */
const startCluster = (count: number, lockExpirationMs: number) =>
  Effect.gen(function*() {
    const { url } = yield* freshSchema
    let release = () => {}
    const released = new Promise<void>((resolve) => (release = resolve))
    const model = yield* MockModelServer.make({
      respond: (request) =>
        request.body.includes("turn_retried")
          ? Reply.text(["resumed ", "and done."])
          : Reply.text(LONG, {}, { writes: [{ events: 6 }, { events: 1_000, after: released }] })
    })
    const dirs = yield* cliDirs
    const ports = yield* Effect.all(Array.from({ length: count }, () => freePort))
    const runners = yield* Effect.all(
      ports.map((port, i) =>
        startServe(
          ["--home", Path.join(dirs.root, `home-${i}`), "--database", url, "--cluster", "--runner-port", String(port), "--shard-lock-expiration", String(lockExpirationMs)],
          // A stray PORT must not become a runner's port: the flag wins.
          { ...model.childEnv("openai-chat"), PORT: "1" }
        )
      ),
      { concurrency: "unbounded" }
    )
    const shardsOf = (base: string) => Effect.map(json(`${base}/healthz`), (r) => r.body["runner"] as { address: string; shards: ReadonlyArray<number> })
    yield* eventually(
      Effect.map(Effect.all(runners.map((r) => shardsOf(r.url))), (all) =>
        all.every((r) => r.shards.length > 0) && new Set(all.flatMap((r) => r.shards)).size === 300 && all.reduce((n, r) => n + r.shards.length, 0) === 300),
      "the runners split the shards"
    )
    for (const [i, runner] of runners.entries()) assert.strictEqual((yield* shardsOf(runner.url)).address, `127.0.0.1:${ports[i]}`)
    return { runners, addresses: ports.map((p) => `127.0.0.1:${p}`), model, release: () => release() }
  })

/**
 * `count` conversations, created round-robin through every runner (any runner answers any
 * request), each sent one message whose stream is read from `readers`; answers once all stream.
 */
const startRuns = (count: number, creators: ReadonlyArray<string>, readers: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const ids: Array<string> = []
    for (let i = 0; i < count; i++) {
      const created = yield* json(`${creators[i % creators.length]!}/v1/conversations`, { method: "POST" })
      assert.strictEqual(created.status, 201)
      ids.push(created.body["id"] as string)
    }
    const streams = ids.map(() => [] as Array<Event>)
    const reading = yield* Effect.forkScoped(
      Effect.all(ids.map((id, i) => sendAndRead(readers[i % readers.length]!, id, streams[i]!)), { concurrency: "unbounded" })
    )
    yield* eventually(Effect.sync(() => streams.every((s) => s.filter((e) => e.chunk.type === "text_delta").length >= 3)), "every run is streaming")
    const runs = yield* Effect.all(streams.map((s) => Effect.map(json(`${readers[0]!}/v1/runs/${s[0]!.chunk.run_id}`), (r) => r.body)))
    return { streams, reading, runs }
  })

/**
 * Every stream ended once, with contiguous seqs; every reconnect is a lost runner's and carries what
 * its request had shown; the runs that were on `lost` reconnected after `since`, and are owned by one
 * of `survivors` now. Answers the delay from `since` to each of those reconnects.
 */
const checkStreams = (streams: ReadonlyArray<ReadonlyArray<Event>>, moved: ReadonlyArray<number>, since: number, reader: string, survivors: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const takeovers: Array<number> = []
    for (const [i, events] of streams.entries()) {
      const seqs = events.map((e) => e.chunk.seq)
      assert.deepStrictEqual(seqs, Array.from({ length: seqs.length }, (_, k) => k + 1), `conversation ${i}: contiguous seqs, no gap, no duplicate`)
      assert.isTrue(events.every((e) => e.id === `${e.chunk.run_id}:${e.chunk.seq}` && e.chunk.run_id === events[0]!.chunk.run_id))
      const stops = events.filter((e) => e.chunk.type === "stop_reason")
      assert.strictEqual(stops.length, 1, `conversation ${i}: one stop_reason`)
      assert.strictEqual(events.at(-1)!.chunk.type, "stop_reason")
      assert.strictEqual(stops[0]!.chunk["reason"], "end_turn")
      assert.include(events.filter((e) => e.chunk.type === "assistant_message").map((e) => e.chunk["content"]).join(""), "done.")
      // Every reconnect is a runner lost (the kill, or a shard that moved), and carries what its request had shown.
      const retrying = events.filter((e) => e.chunk.type === "request_end" && e.chunk["status"] === "retrying")
      for (const end of retrying) {
        assert.strictEqual((end.chunk["error"] as { tag: string }).tag, "RunnerLost")
        const begin = events.findLast((e) => e.chunk.type === "request_begin" && e.chunk.seq < end.chunk.seq)!
        const shown = events.filter((e) => e.chunk.type === "text_delta" && e.chunk.seq > begin.chunk.seq && e.chunk.seq < end.chunk.seq)
          .map((e) => e.chunk["content"]).join("")
        const retried = events.find((e) => e.chunk.type === "turn_retried" && e.chunk.seq > end.chunk.seq)!
        if (shown.length > 0) assert.include(retried.chunk["content"] as string, shown, `conversation ${i}: [turn_retried] carries the partial text`)
      }
      if (!moved.includes(i)) continue
      const after = retrying.filter((e) => e.at >= since)
      assert.isAbove(after.length, 0, `conversation ${i} was on the lost runner: its request is reconnected`)
      takeovers.push(after[0]!.at - since)
      const run = yield* json(`${reader}/v1/runs/${events[0]!.chunk.run_id}`)
      assert.deepStrictEqual([run.body["status"], run.body["stop_reason"]], ["completed", "end_turn"])
      assert.include(survivors, run.body["owner"], "a surviving runner owns it now")
    }
    return takeovers
  })

onPostgres("cluster failover (runner processes on one PostgreSQL)", () => {
  it.scopedLive("a runner killed mid-run: its conversations move, their runs reconnect, all 20 streams end once with contiguous seqs", () =>
    Effect.gen(function*() {
      const { addresses, model, release, runners } = yield* startCluster(3, LOCK_EXPIRATION_MS)
      const [first, second, victim] = runners as [typeof runners[0], typeof runners[0], typeof runners[0]]
      // Each stream is read from a runner that survives; the runs live wherever their shards are.
      const { reading, runs, streams } = yield* startRuns(CONVERSATIONS, runners.map((r) => r.url), [first.url, second.url])
      const moved = runs.flatMap((run, i) => (run["owner"] === addresses[2] && run["status"] === "running" ? [i] : []))
      assert.isAbove(moved.length, 0, "the victim runs some of the conversations")

      const killedAt = Date.now()
      yield* victim.signal("SIGKILL")
      release()
      yield* reading.await
      const takeovers = yield* checkStreams(streams, moved, killedAt, first.url, addresses.slice(0, 2))
      // The client sent each message once: one first request per conversation reached the model.
      const requests = yield* model.requests
      assert.strictEqual(requests.filter((r) => !r.body.includes("turn_retried")).length, CONVERSATIONS)
      console.log(
        `cluster failover: ${moved.length}/${CONVERSATIONS} conversations moved; takeover (SIGKILL → reconnect on the new owner) ` +
          `${Math.min(...takeovers)}–${Math.max(...takeovers)} ms with a ${LOCK_EXPIRATION_MS} ms shard lock expiration`
      )
    }), 120_000)

  it.scopedLive("SIGTERM hands the runner's shards over at once: its runs go on elsewhere long before its locks would expire", () =>
    Effect.gen(function*() {
      const { addresses, release, runners } = yield* startCluster(2, LONG_LOCK_EXPIRATION_MS)
      const [survivor, leaving] = runners as [typeof runners[0], typeof runners[0]]
      const { reading, runs, streams } = yield* startRuns(6, runners.map((r) => r.url), [survivor.url])
      const moved = runs.flatMap((run, i) => (run["owner"] === addresses[1] && run["status"] === "running" ? [i] : []))
      assert.isAbove(moved.length, 0, "the leaving runner runs some of the conversations")

      const stoppedAt = Date.now()
      yield* leaving.stop
      yield* leaving.exited
      release()
      yield* reading.await
      const takeovers = yield* checkStreams(streams, moved, stoppedAt, survivor.url, [addresses[0]!])
      console.log(`cluster handover: SIGTERM → reconnect on the new owner ${Math.min(...takeovers)}–${Math.max(...takeovers)} ms (locks would expire after ${LONG_LOCK_EXPIRATION_MS} ms)`)
    }), 60_000)
})
