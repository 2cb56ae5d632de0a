import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, Layer, Stream } from "effect"
import type { Chunk } from "../../src/domain/Events.js"
import { type Budgets, turnBudgets } from "../../src/domain/Recovery.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { finish, gatedProvider, remote, startServer, text } from "../support/serverHarness.js"
import { Fault, makeTcpProxy } from "../support/tcpProxy.js"
import { input, user } from "../support/testing.js"

const textOf = (chunks: ReadonlyArray<Chunk>) => chunks.flatMap((c) => (c.type === "text_delta" ? [c.content] : [])).join("")
const seqs = (chunks: ReadonlyArray<Chunk>) => chunks.map((c) => c.seq)
const oneToN = (n: number) => Array.from({ length: n }, (_, i) => i + 1)

/** A server on a memory store behind a proxy with `plan`; `direct` talks to the server, `proxied` through the proxy. */
const setup = (plan: Parameters<typeof makeTcpProxy>[1], options: { readonly budgets?: Budgets; readonly idleTimeoutMs?: number } = {}) =>
  Effect.gen(function*() {
    const gate = yield* gatedProvider
    const server = yield* startServer().pipe(Effect.provide(Layer.merge(layerMemory, gate.layer)))
    const proxy = yield* makeTcpProxy(server, plan)
    const direct = yield* remote({ url: server.url })
    const proxied = yield* remote({ url: proxy.url, ...options })
    const conv = yield* direct.createConversation({})
    return { gate, proxy, direct, proxied, conv }
  })

describe("remote run streams across dropped connections", () => {
  it.scopedLive("a connection cut in the middle of an event: the client resumes after its last seq, every seq once, in order", () =>
    Effect.gen(function*() {
      const { conv, gate, proxied, proxy } = yield* setup((i) => (i === 0 ? Fault.midEvent(3) : undefined))
      const consumer = yield* Effect.fork(Stream.runCollect(proxied.send(conv.id, input(user("go")))))
      yield* gate.emit(...text("a", "b", "c", "d"))
      yield* proxy.cut(1)
      // the run is still live: the rest is produced only once the client is back
      yield* proxy.requested(2)
      yield* gate.emit(...text("e", "f"), ...finish)
      const chunks = Array.from(yield* Fiber.join(consumer))
      assert.deepStrictEqual(seqs(chunks), oneToN(chunks.length))
      assert.strictEqual(textOf(chunks), "abcdef")
      const stop = chunks.at(-1)!
      assert.strictEqual(stop.type === "stop_reason" && stop.reason, "end_turn")
      assert.match(proxy.requests[0]!, /^POST \/v1\/conversations\/[^/]+\/messages /)
      assert.strictEqual(proxy.requests[1], `GET /v1/runs/${chunks[0]!.run_id}/stream?after=3 HTTP/1.1`)
      assert.strictEqual(yield* gate.calls, 1)
    }))

  it.scopedLive("a POST cut before its first chunk is sent again; its otid brings back the run it started", () =>
    Effect.gen(function*() {
      const { conv, direct, gate, proxied, proxy } = yield* setup((i) => (i === 0 ? Fault.afterRequest : undefined))
      const consumer = yield* Effect.fork(Stream.runCollect(proxied.send(conv.id, input(user("go")))))
      yield* proxy.cut(1)
      yield* proxy.requested(2)
      yield* gate.emit(...text("x", "y"), ...finish)
      const chunks = Array.from(yield* Fiber.join(consumer))
      assert.deepStrictEqual(seqs(chunks), oneToN(chunks.length))
      assert.strictEqual(textOf(chunks), "xy")
      assert.match(proxy.requests[1]!, /^POST \/v1\/conversations\/[^/]+\/messages /)
      // one model call, one run, one user message
      assert.strictEqual(yield* gate.calls, 1)
      const users = (yield* direct.history(conv.id)).filter((h) => h.item.type === "user_message")
      assert.strictEqual(users.length, 1)
    }))

  it.scopedLive("drops are bounded: after the policy's 5 reconnects the stream fails with StreamBroken, having emitted each seq once", () =>
    Effect.gen(function*() {
      const fast = { ...turnBudgets, baseMs: 1, capMs: 4 }
      const { conv, gate, proxied, proxy } = yield* setup((i) => (i === 0 ? Fault.midEvent(2) : Fault.refuse), { budgets: fast })
      const seen: Array<Chunk> = []
      const consumer = yield* Effect.fork(Effect.either(Stream.runForEach(proxied.send(conv.id, input(user("go"))), (c) => Effect.sync(() => seen.push(c)))))
      yield* gate.emit(...text("a", "b", "c"))
      const result = yield* Fiber.join(consumer)
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) {
        assert.strictEqual(result.left._tag, "StreamBroken")
        assert.match(result.left.message, /gave up after 5 reconnects/)
      }
      assert.deepStrictEqual(seqs(seen), [1, 2])
      // the first connection and its 5 reconnects were all cut
      yield* proxy.cut(6)
      yield* gate.emit(...finish)
    }))

  it.scopedLive("a connection that goes silent (no data, not even heartbeats) is dropped after the idle timeout and resumed", () =>
    Effect.gen(function*() {
      const { conv, gate, proxied, proxy } = yield* setup((i) => (i === 0 ? Fault.silentAfter(2) : undefined), { idleTimeoutMs: 100 })
      const consumer = yield* Effect.fork(Stream.runCollect(proxied.send(conv.id, input(user("go")))))
      yield* gate.emit(...text("a", "b", "c"))
      yield* proxy.cut(1)
      yield* proxy.requested(2)
      yield* gate.emit(...finish)
      const chunks = Array.from(yield* Fiber.join(consumer))
      assert.deepStrictEqual(seqs(chunks), oneToN(chunks.length))
      assert.strictEqual(textOf(chunks), "abc")
      assert.strictEqual(proxy.requests[1], `GET /v1/runs/${chunks[0]!.run_id}/stream?after=2 HTTP/1.1`)
    }))
})
