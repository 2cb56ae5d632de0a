import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Option, Scope, Stream } from "effect"
import * as Net from "node:net"
import type { Chunk } from "../../src/domain/Events.js"
import { BatonServer, serve } from "../../src/programs/server/Server.js"
import { Backend } from "../../src/services/Backend.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { Store } from "../../src/services/Store.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { finish, gatedProvider, json, readSse, remote, text } from "../support/serverHarness.js"
import { input, user } from "../support/testing.js"

/** Whether a new TCP connection to `port` is refused. */
const refused = (port: number) =>
  Effect.async<boolean>((resume) => {
    const socket = Net.connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      resume(Effect.succeed(false))
    })
    socket.once("error", () => resume(Effect.succeed(true)))
  })

/** Polls a real condition (the listener closing happens inside the server's finalizer). */
const until = <E, R>(check: Effect.Effect<boolean, E, R>) =>
  Effect.repeat(Effect.tap(check, (ok) => (ok ? Effect.void : Effect.sleep("5 millis"))), { until: (ok) => ok })

/** A backend over the gated model, served by a server in its own scope (closed by the test). */
const servedBackend = (options: { readonly drainTimeoutMs?: number } = {}) =>
  Effect.gen(function*() {
    const gate = yield* gatedProvider
    const deps = yield* Layer.build(Layer.merge(layerMemory, gate.layer))
    const backend = Context.get(yield* Layer.build(layerLocal()).pipe(Effect.provide(deps)), Backend)
    const serverScope = yield* Scope.make()
    const server = Context.get(
      yield* Layer.buildWithScope(serve({ port: 0, ...options }).pipe(Layer.provide(Layer.succeed(Backend, backend))), serverScope),
      BatonServer
    )
    const client = yield* remote({ url: server.url })
    return { gate, deps, serverScope, server, client }
  })

describe("server shutdown", () => {
  it.scopedLive("closing the server stops accepting, lets the active run reach its stop reason, then closes", () =>
    Effect.gen(function*() {
      const { client, deps, gate, server, serverScope } = yield* servedBackend()
      const conv = yield* client.createConversation({})
      const streaming = yield* Deferred.make<void>()
      const seen: Array<Chunk> = []
      const consumer = yield* Effect.fork(Stream.runForEach(client.send(conv.id, input(user("go"))), (c) =>
        Effect.zipRight(Effect.sync(() => seen.push(c)), c.type === "text_delta" ? Deferred.succeed(streaming, undefined) : Effect.void)))
      yield* gate.emit(...text("half"))
      yield* Deferred.await(streaming)

      const closer = yield* Effect.fork(Scope.close(serverScope, Exit.void))
      yield* until(refused(server.port))
      assert.isTrue(Option.isNone(yield* Fiber.poll(closer)), "shutdown waits for the run")

      yield* gate.emit(...text(" done"), ...finish)
      yield* Fiber.join(consumer)
      yield* Fiber.join(closer)
      assert.deepStrictEqual(seen.map((c) => c.seq), seen.map((_, i) => i + 1))
      const stop = seen.at(-1)!
      assert.strictEqual(stop.type === "stop_reason" && stop.reason, "end_turn")
      const run = yield* Effect.flatMap(Store, (store) => store.getRun(stop.run_id)).pipe(Effect.provide(deps))
      assert.strictEqual(run.status, "completed")
    }))

  it.scopedLive("a run whose client went away is still waited for: the server follows it from where the client left off", () =>
    Effect.gen(function*() {
      // A drain bound far beyond the test's own timeout: shutdown can only end by the run ending.
      const { client, deps, gate, server, serverScope } = yield* servedBackend({ drainTimeoutMs: 120_000 })
      const conv = yield* client.createConversation({})
      const streaming = yield* Deferred.make<void>()
      const consumer = yield* Effect.fork(Stream.runForEach(client.send(conv.id, input(user("go"))), (c) =>
        c.type === "text_delta" ? Deferred.succeed(streaming, undefined) : Effect.void))
      yield* gate.emit(...text("half"))
      yield* Deferred.await(streaming)
      yield* Fiber.interrupt(consumer)

      const closer = yield* Effect.fork(Scope.close(serverScope, Exit.void))
      yield* until(refused(server.port))
      assert.isTrue(Option.isNone(yield* Fiber.poll(closer)), "shutdown waits for the run")
      yield* gate.emit(...text(" done"), ...finish)
      yield* Fiber.join(closer)
      const runs = yield* Effect.flatMap(Store, (store) => store.listItems(conv.id)).pipe(Effect.provide(deps))
      const stop = runs.map((s) => s.item).find((i) => i.type === "stop_reason")
      assert.strictEqual(stop?.type === "stop_reason" && stop.reason, "end_turn")
    }))

  it.scopedLive("a run still active after the drain bound is left to the next start-up, which closes it as failed", () =>
    Effect.gen(function*() {
      const gate = yield* gatedProvider
      const deps = yield* Layer.build(Layer.merge(layerMemory, gate.layer))
      const backendScope = yield* Scope.make()
      const backend = Context.get(yield* Layer.buildWithScope(layerLocal(), backendScope).pipe(Effect.provide(deps)), Backend)
      const serverScope = yield* Scope.make()
      const server = Context.get(
        yield* Layer.buildWithScope(serve({ port: 0, drainTimeoutMs: 50 }).pipe(Layer.provide(Layer.succeed(Backend, backend))), serverScope),
        BatonServer
      )
      const conv = yield* backend.createConversation({})
      const reader = yield* Effect.fork(readSse(`${server.url}/v1/conversations/${conv.id}/messages`, json({ messages: [user("go")] })))
      yield* gate.emit(...text("never finishing"))
      yield* Effect.flatMap(Store, (store) => until(Effect.map(store.activeRun(conv.id), Option.isSome).pipe(Effect.orDie))).pipe(Effect.provide(deps))

      yield* Scope.close(serverScope, Exit.void)
      const read = yield* Fiber.join(reader)
      assert.isFalse(read.events.some((e) => e.data.includes("stop_reason")), "the stream ended without a stop reason")
      yield* Scope.close(backendScope, Exit.void)

      const store = Context.get(deps, Store)
      const runId = (yield* Effect.orDie(store.activeRun(conv.id))).pipe(Option.getOrThrow).id
      assert.strictEqual((yield* store.getRun(runId)).status, "running")
      const next = Context.get(yield* Layer.build(layerLocal()).pipe(Effect.provide(deps)), Backend)
      const closed = yield* store.getRun(runId)
      assert.deepStrictEqual([closed.status, closed.stopReason], ["failed", "error"])
      assert.isTrue(Option.isNone(yield* store.activeRun(conv.id)))
      assert.isDefined(next)
    }))
})
