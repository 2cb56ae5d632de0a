import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Either, Exit, Fiber, Layer, Queue, Ref, Scope, Stream } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Backend } from "../../src/services/Backend.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { BatonServer, serve } from "../../src/programs/server/Server.js"
import { open } from "../../src/programs/session/Session.js"
import { makeBackendRemote, type RemoteWait } from "../../src/services/backend/Remote.js"
import { layerScripted, ProviderScript, type ScriptEntry, Turn } from "../../src/services/provider/Scripted.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { ToolExecutor } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import { collect, input, user } from "../support/testing.js"
import { tempDir } from "../support/tempDir.js"

/**
 * A `--server` client across a server restart: the server (real HTTP on 127.0.0.1) is stopped while a
 * call is on its way, the call waits — its wait announced through `onWait`, which is how the test knows
 * it is waiting, never a sleep — and a new server on the same port, over the same backend, answers it.
 */

/** The conversations and the model live here, outside every server: a restart keeps them. */
const behindTheServer = (script: ReadonlyArray<ScriptEntry>) =>
  layerLocal().pipe(Layer.provide(layerMemory), Layer.provideMerge(layerScripted(script)))

const restartable = (script: ReadonlyArray<ScriptEntry>) =>
  Effect.gen(function*() {
    const backendContext = yield* Layer.build(behindTheServer(script))
    const current = yield* Ref.make<Scope.CloseableScope | undefined>(undefined)
    const up = (port: number) =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const built = yield* Layer.buildWithScope(serve({ port, drainTimeoutMs: 200 }), scope).pipe(Effect.provide(backendContext))
        yield* Ref.set(current, scope)
        return Context.get(built, BatonServer).url
      })
    const down = Effect.flatMap(Ref.getAndSet(current, undefined), (scope) => (scope === undefined ? Effect.void : Scope.close(scope, Exit.void)))
    yield* Effect.addFinalizer(() => down)
    const url = yield* up(0)
    const port = Number(new URL(url).port)
    const waits = yield* Queue.unbounded<RemoteWait>()
    const client: Backend["Type"] = yield* makeBackendRemote({ url, onWait: (w) => Queue.offer(waits, w) }).pipe(
      Effect.provide(FetchHttpClient.layer)
    )
    return { client, port, down, up: up(port), waits, backendContext }
  })

/** The call started while the server is down; once it announced its wait, the server comes back. */
const acrossRestart = <A>(
  h: Effect.Effect.Success<ReturnType<typeof restartable>>,
  name: string,
  call: Effect.Effect<A, unknown>
) =>
  Effect.gen(function*() {
    yield* h.down
    const fiber = yield* Effect.fork(call)
    const wait = yield* Queue.take(h.waits)
    assert.strictEqual(wait.call, name)
    assert.match(wait.message, /cannot reach the Baton server/)
    assert.strictEqual(wait.retryInMs, 250)
    assert.isNull(fiber.unsafePoll(), `${name} waits for the server`)
    yield* h.up
    return yield* Fiber.join(fiber)
  })

describe("the remote client across a server restart", () => {
  it.scopedLive("every call waits for the server and then answers as if nothing happened", () =>
    Effect.gen(function*() {
      const h = yield* restartable([Turn.text("hello there"), Turn.toolCalls([{ id: "c1", name: "Read" }])])
      const { client } = h
      const conversation = yield* client.createConversation({})
      const chunks = yield* collect(client.send(conversation.id, input(user("hi"))))
      // Steering needs a task running: this one waits for the result of its call.
      const working = yield* client.createConversation({})
      yield* collect(client.send(working.id, input(user("read it"))))
      const runId = chunks[0]!.run_id
      const history = yield* client.history(conversation.id)

      assert.deepStrictEqual(yield* acrossRestart(h, "history", client.history(conversation.id)), history)
      assert.deepStrictEqual(yield* acrossRestart(h, "backfill", client.backfill(conversation.id)), yield* client.backfill(conversation.id))
      assert.deepStrictEqual(yield* acrossRestart(h, "pendingApprovals", client.pendingApprovals(conversation.id)), [])
      assert.strictEqual((yield* acrossRestart(h, "getConversation", client.getConversation(conversation.id))).id, conversation.id)
      assert.isTrue((yield* acrossRestart(h, "listConversations", client.listConversations())).items.some((c) => c.id === conversation.id))
      assert.strictEqual((yield* acrossRestart(h, "getRun", client.getRun(runId))).id, runId)
      assert.isAbove((yield* acrossRestart(h, "usage", client.usage())).total.requests, 0)
      assert.strictEqual(yield* acrossRestart(h, "compactability", client.compactability(conversation.id)), "ok")
      assert.include(yield* acrossRestart(h, "exportTrace", client.exportTrace(conversation.id, 1)), "hello there")

      yield* acrossRestart(h, "steer", client.steer(working.id, "and one more thing"))
      const held = yield* client.heldSteering(working.id)
      assert.strictEqual(held.length, 1, "steered once")
      assert.include(held[0]!.content, "and one more thing")
      assert.deepStrictEqual(yield* acrossRestart(h, "takeSteering", client.takeSteering(working.id)), held)

      const fork = yield* acrossRestart(h, "fork", client.fork(conversation.id))
      assert.strictEqual(fork.forked_from?.conversation_id, conversation.id)
      const forks = (yield* client.listConversations()).items.filter((c) => c.forked_from?.conversation_id === conversation.id)
      assert.strictEqual(forks.length, 1, "forked once")

      yield* acrossRestart(h, "cancel", client.cancel(conversation.id, {}))
      const created = yield* acrossRestart(h, "createConversation", client.createConversation({}))
      assert.strictEqual((yield* client.getConversation(created.id)).id, created.id)
    }), 60_000)

  it.scopedLive("a 503 from a draining server is waited out like a dropped connection", () =>
    Effect.gen(function*() {
      const h = yield* restartable([Turn.toolCalls([{ id: "c1", name: "Read" }])])
      const conversation = yield* h.client.createConversation({})
      yield* collect(h.client.send(conversation.id, input(user("read it"))))
      yield* h.down
      // In the server's place, one that is shutting down: every request gets the server's own 503.
      const hits = yield* Ref.make(0)
      const draining = yield* listenOn(h.port, (_, res) => {
        Effect.runSync(Ref.update(hits, (n) => n + 1))
        res.writeHead(503, { "content-type": "application/json", connection: "close" })
        res.end(JSON.stringify({ code: "unavailable", message: "the server is shutting down" }))
      })
      const fiber = yield* Effect.fork(h.client.steer(conversation.id, "steady"))
      const wait = yield* Queue.take(h.waits)
      assert.deepStrictEqual([wait.call, wait.message, wait.retryInMs], ["steer", "the server is shutting down", 250])
      yield* draining.close
      assert.strictEqual(yield* Ref.get(hits), 1)
      yield* h.up
      yield* Fiber.join(fiber)
      const held = yield* h.client.heldSteering(conversation.id)
      assert.strictEqual(held.length, 1)
      assert.include(held[0]!.content, "steady")
    }), 30_000)

  it.scopedLive("a steer whose connection broke after it was sent is not sent again (it may have been taken)", () =>
    Effect.gen(function*() {
      const h = yield* restartable([])
      const conversation = yield* h.client.createConversation({})
      yield* h.down
      const hits = yield* Ref.make(0)
      const cutter = yield* listenOn(h.port, (req) => {
        Effect.runSync(Ref.update(hits, (n) => n + 1))
        req.socket.destroy()
      })
      const result = yield* Effect.either(h.client.steer(conversation.id, "maybe twice"))
      assert.isTrue(Either.isLeft(result) && result.left._tag === "StreamBroken")
      assert.strictEqual(yield* Ref.get(hits), 1)
      yield* cutter.close
      // A read is resent after the same break: it changes nothing.
      const reads = yield* Ref.make(0)
      const cutOnce = yield* listenOn(h.port, (req) => {
        Effect.runSync(Ref.update(reads, (n) => n + 1))
        req.socket.destroy()
      })
      const fiber = yield* Effect.fork(h.client.history(conversation.id))
      yield* Queue.take(h.waits)
      yield* cutOnce.close
      yield* h.up
      assert.deepStrictEqual(yield* Fiber.join(fiber), [])
      assert.strictEqual(yield* Ref.get(reads), 1)
    }), 30_000)

  it.scopedLive("Ctrl-C while the server restarts: the carry-over is recorded once, when the server is back", () =>
    Effect.gen(function*() {
      const h = yield* restartable([Turn.stall({ text: "half an answ" }), Turn.text("picking up")])
      const executor = yield* makeToolExecutor({ workspace: yield* tempDir })
      const conversationId = yield* Effect.scoped(Effect.gen(function*() {
        const session = yield* open({}).pipe(Effect.provideService(ToolExecutor, executor), Effect.provideService(Backend, h.client))
        const seen = yield* Deferred.make<void>()
        const reader = yield* session.run("tell me").pipe(
          Stream.runForEach((e) => (e.type === "text_delta" ? Deferred.succeed(seen, undefined) : Effect.void)),
          Effect.fork
        )
        yield* Deferred.await(seen)
        yield* h.down
        // The interrupt itself ends once the task's finalizers could reach the server: it is not waited on here.
        const interrupting = yield* Effect.fork(session.interrupt)
        // The cancel carrying the partial answer waits for the server (so may the task's other calls).
        for (;;) if ((yield* Queue.take(h.waits)).call === "cancel") break
        const aborts = Effect.map(Context.get(h.backendContext, Backend).history(session.conversationId), (items) =>
          items.filter((i) => i.item.type === "abort").length)
        assert.strictEqual(yield* aborts, 0, "nothing recorded while the server is down")
        yield* h.up
        yield* Fiber.join(interrupting)
        yield* Fiber.await(reader)
        // Closing the session waits for its cancels.
        return session.conversationId
      }))
      const history = yield* h.client.history(conversationId)
      assert.strictEqual(history.filter((i) => i.item.type === "abort").length, 1, "one abort recorded")
      yield* collect(h.client.send(conversationId, input(user("go on"))))
      const requests = yield* Effect.flatMap(ProviderScript, (s) => s.requests).pipe(Effect.provide(h.backendContext))
      const carried = JSON.stringify(requests[1]!.history)
      assert.strictEqual(carried.split("[turn_aborted]").length - 1, 1, carried)
      assert.include(carried, "half an answ")
    }), 30_000)
})

/** A plain HTTP server on `port` answering with `handle`, closed with the scope or by `close`. */
const listenOn = (port: number, handle: (req: Http.IncomingMessage, res: Http.ServerResponse) => void) =>
  Effect.gen(function*() {
    const server = Http.createServer(handle)
    yield* Effect.async<void>((resume) => void server.listen(port, "127.0.0.1", () => resume(Effect.void)))
    assert.strictEqual((server.address() as AddressInfo).port, port)
    const close = Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
      if (!server.listening) resume(Effect.void)
    })
    yield* Effect.addFinalizer(() => (server.listening ? close : Effect.void))
    return { close }
  })
