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

onPostgres("cluster failover (3 runner processes)", () =>
  it.scopedLive("a runner killed mid-run: its conversations move, their runs reconnect, all 20 streams end once with contiguous seqs", () =>
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
      const runnerPorts = yield* Effect.all([freePort, freePort, freePort])
      const runners = yield* Effect.all(
        runnerPorts.map((port, i) =>
          startServe(
            ["--home", Path.join(dirs.root, `home-${i}`), "--database", url, "--cluster", "--runner-port", String(port), "--shard-lock-expiration", String(LOCK_EXPIRATION_MS)],
            // A stray PORT must not become a runner's port: the flag wins.
            { ...model.childEnv("openai-chat"), PORT: "1" }
          )
        ),
        { concurrency: "unbounded" }
      )
      const [first, second, victim] = runners as [typeof runners[0], typeof runners[0], typeof runners[0]]
      const victimAddress = `127.0.0.1:${runnerPorts[2]}`

      // Every runner holds its share of the 300 shards, and together all of them, before anything starts.
      const shardsOf = (base: string) => Effect.map(json(`${base}/healthz`), (r) => r.body["runner"] as { address: string; shards: ReadonlyArray<number> })
      yield* eventually(
        Effect.map(Effect.all(runners.map((r) => shardsOf(r.url))), (all) =>
          all.every((r) => r.shards.length > 0) && new Set(all.flatMap((r) => r.shards)).size === 300 && all.reduce((n, r) => n + r.shards.length, 0) === 300),
        "the three runners split the shards",
        400
      )
      assert.deepStrictEqual((yield* shardsOf(victim.url)).address, victimAddress)

      // Conversations are created through the victim too: any runner answers any request.
      const ids: Array<string> = []
      for (let i = 0; i < CONVERSATIONS; i++) {
        const created = yield* json(`${runners[i % 3]!.url}/v1/conversations`, { method: "POST" })
        assert.strictEqual(created.status, 201)
        ids.push(created.body["id"] as string)
      }
      // Each stream is read from a runner that survives; the runs live wherever their shards are.
      const streams = ids.map(() => [] as Array<Event>)
      const reading = yield* Effect.forkScoped(
        Effect.all(ids.map((id, i) => sendAndRead((i % 2 === 0 ? first : second).url, id, streams[i]!)), { concurrency: "unbounded" })
      )
      yield* eventually(Effect.sync(() => streams.every((s) => s.filter((e) => e.chunk.type === "text_delta").length >= 3)), "every run is streaming")

      const owners = yield* Effect.all(streams.map((s) => Effect.map(json(`${first.url}/v1/runs/${s[0]!.chunk.run_id}`), (r) => r.body)))
      const moved = owners.flatMap((run, i) => (run["owner"] === victimAddress && run["status"] === "running" ? [i] : []))
      assert.isAbove(moved.length, 0, "the victim runs some of the conversations")

      const killedAt = Date.now()
      yield* victim.signal("SIGKILL")
      release()
      yield* reading.await

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
        const afterKill = retrying.filter((e) => e.at >= killedAt)
        assert.isAbove(afterKill.length, 0, `conversation ${i} was on the killed runner: its request is reconnected`)
        takeovers.push(afterKill[0]!.at - killedAt)
        const after = yield* json(`${first.url}/v1/runs/${events[0]!.chunk.run_id}`)
        assert.deepStrictEqual([after.body["status"], after.body["stop_reason"]], ["completed", "end_turn"])
        assert.include([`127.0.0.1:${runnerPorts[0]}`, `127.0.0.1:${runnerPorts[1]}`], after.body["owner"], "a surviving runner owns it now")
      }
      // The client sent each message once: one user message per conversation.
      const requests = yield* model.requests
      assert.strictEqual(requests.filter((r) => !r.body.includes("turn_retried")).length, CONVERSATIONS)
      console.log(
        `cluster failover: ${moved.length}/${CONVERSATIONS} conversations moved; takeover (SIGKILL → reconnect on the new owner) ` +
          `${Math.min(...takeovers)}–${Math.max(...takeovers)} ms with a ${LOCK_EXPIRATION_MS} ms shard lock expiration`
      )
    }), 120_000))
