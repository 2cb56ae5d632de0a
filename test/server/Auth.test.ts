import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Logger, Redacted } from "effect"
import { ConversationId } from "../../src/domain/Ids.js"
import { bearerCheck, isLoopbackHost } from "../../src/programs/server/Auth.js"
import { serve, ServerStartError } from "../../src/programs/server/Server.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { layerScripted, Turn } from "../../src/services/provider/Scripted.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { fetchJson, json, remote, startServer } from "../support/serverHarness.js"
import { collect, input, user } from "../support/testing.js"

const TOKEN = "s3cret-token-value"
const deps = Layer.merge(layerMemory, layerScripted([Turn.text("hi")]))

describe("server auth", () => {
  it("loopback hosts: 127.0.0.0/8, ::1, localhost; nothing else", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST", "::ffff:127.0.0.1"]) assert.isTrue(isLoopbackHost(host), host)
    for (const host of ["0.0.0.0", "::", "192.168.1.20", "10.0.0.1", "example.com", "127.0.0.1.example.com", ""]) assert.isFalse(isLoopbackHost(host), host)
  })

  it("bearer check: exact token only, scheme case-insensitive", () => {
    const check = bearerCheck(Redacted.make(TOKEN))
    assert.isTrue(check(`Bearer ${TOKEN}`))
    assert.isTrue(check(`bearer ${TOKEN}`))
    for (const header of [undefined, "", "Bearer", `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(1)}`, `Basic ${TOKEN}`, TOKEN, `Bearer ${TOKEN} extra`]) {
      assert.isFalse(check(header), String(header))
    }
  })

  it.scoped("with a token, every endpoint but /healthz answers 401 unauthorized without it or with a wrong one", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ token: Redacted.make(TOKEN) }).pipe(Effect.provide(deps))
      const paths = ["/v1/conversations", "/v1/conversations/x/pending-approvals", "/v1/runs/r/stream", "/openapi.json", "/docs", "/no/such/route"]
      for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: `Basic ${TOKEN}` }]) {
        for (const path of paths) {
          const res = yield* fetchJson(`${server.url}${path}`, { headers })
          assert.strictEqual(res.status, 401, path)
          assert.deepStrictEqual(res.body, { code: "unauthorized", message: "missing or wrong bearer token" })
          assert.strictEqual(res.headers.get("www-authenticate"), "Bearer")
        }
        const post = yield* fetchJson(`${server.url}/v1/conversations`, { ...json({ settings: {} }), headers: { ...headers, "content-type": "application/json" } })
        assert.strictEqual(post.status, 401)
      }
      assert.strictEqual((yield* fetchJson(`${server.url}/healthz`)).status, 200)
      const ok = yield* fetchJson(`${server.url}/v1/conversations`, { headers: { authorization: `Bearer ${TOKEN}` } })
      assert.strictEqual(ok.status, 200)
    }))

  it.scoped("the remote backend hears Unauthorized as the typed error; with the token it works; the token never reaches the logs", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ cause, message }) => void lines.push(`${String(message)} ${String(cause)}`)))
      const server = yield* startServer({ token: Redacted.make(TOKEN) }).pipe(Effect.provide(Layer.merge(deps, capture)))
      const anonymous = yield* remote({ url: server.url })
      const wrong = yield* remote({ url: server.url, token: Redacted.make("nope") })
      for (const backend of [anonymous, wrong]) {
        const failed = yield* Effect.either(backend.listConversations())
        assert.isTrue(Either.isLeft(failed) && failed.left._tag === "Unauthorized")
        const streamed = yield* Effect.either(collect(backend.send(ConversationId.make("c"), input(user("x")))))
        assert.isTrue(Either.isLeft(streamed) && streamed.left._tag === "Unauthorized")
      }
      const authorized = yield* remote({ url: server.url, token: Redacted.make(TOKEN) })
      const conv = yield* authorized.createConversation({})
      const chunks = yield* collect(authorized.send(conv.id, input(user("hello"))))
      assert.strictEqual(chunks.at(-1)!.type, "stop_reason")
      assert.isFalse(lines.some((line) => line.includes(TOKEN)))
    }))

  it.effect("binding a non-loopback address without a token refuses to start, saying why", () =>
    Effect.gen(function*() {
      for (const host of ["0.0.0.0", "::", "192.168.1.20", "example.com"]) {
        const started = yield* Effect.either(Effect.scoped(Layer.build(serve({ host, port: 0 }).pipe(Layer.provide(layerLocal()), Layer.provide(deps)))))
        assert.isTrue(Either.isLeft(started), host)
        if (Either.isLeft(started)) {
          assert.strictEqual(started.left._tag, "ServerStartError")
          assert.strictEqual(started.left._tag === "ServerStartError" && started.left.reason, "insecure_bind")
          assert.include(started.left.message, "without a token")
        }
      }
      const empty = yield* Effect.either(Effect.scoped(Layer.build(serve({ port: 0, token: Redacted.make("") }).pipe(Layer.provide(layerLocal()), Layer.provide(deps)))))
      assert.isTrue(Either.isLeft(empty) && empty.left._tag === "ServerStartError" && empty.left.reason === "empty_token")
    }))

  it.scoped("a port in use refuses to start, saying so", () =>
    Effect.gen(function*() {
      const first = yield* startServer().pipe(Effect.provide(deps))
      const second = yield* Effect.either(startServer({ port: first.port }).pipe(Effect.provide(deps)))
      assert.isTrue(Either.isLeft(second) && second.left instanceof ServerStartError && second.left.reason === "listen")
      if (Either.isLeft(second) && second.left instanceof ServerStartError) assert.include(second.left.message, "EADDRINUSE")
    }))

  it.scoped("a non-loopback address with a token starts", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ host: "0.0.0.0", token: Redacted.make(TOKEN) }).pipe(Effect.provide(deps))
      const res = yield* fetchJson(`http://127.0.0.1:${server.port}/healthz`)
      assert.strictEqual(res.status, 200)
    }))
})
