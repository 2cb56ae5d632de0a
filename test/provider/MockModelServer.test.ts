import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope, Stream } from "effect"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply, splitSse } from "../support/MockModelServer.js"
import { collapse, liveProvider, request, run, settings, user } from "../support/ProviderHarness.js"

describe("MockModelServer", () => {
  it("splitSse keeps each event's blank line and a partial tail as it is", () => {
    assert.deepStrictEqual(splitSse("data: a\n\nevent: x\ndata: b\n\ndata: par"), ["data: a\n\n", "event: x\ndata: b\n\n", "data: par"])
  })

  it.scopedLive("a scripted session: tool calls, then a 503 with retry-after, then text; requests recorded", () =>
    Effect.gen(function*() {
      const server = yield* MockModelServer.make()
      yield* server.enqueue(
        Reply.toolCalls([{ id: "c1", name: "Read", args: { path: "a" } }, { id: "c2", name: "LS", args: {} }]),
        Reply.status(503, { headers: { "retry-after": "1" } }),
        Reply.text("done")
      )
      const provider = yield* liveProvider("openai-chat", settings(server.baseUrl("openai-chat")))
      const one = yield* run(provider.stream(request({ history: [user("first")] })))
      const two = yield* run(provider.stream(request({ history: [user("second")] })))
      const three = yield* run(provider.stream(request({ history: [user("third")] })))
      assert.deepStrictEqual(one.events.filter((e) => e._tag === "ToolCallEnd").map((e) => e._tag === "ToolCallEnd" && e.name), ["Read", "LS"])
      assert.deepStrictEqual(two.error?._tag === "ProviderServerError" && two.error.status, 503)
      assert.deepStrictEqual(collapse(three.events)[0], { _tag: "TextDelta", text: "done" })
      const requests = yield* server.awaitRequests(3)
      assert.deepStrictEqual(requests.map((r) => r.path), ["/v1/chat/completions", "/v1/chat/completions", "/v1/chat/completions"])
      assert.deepStrictEqual(
        requests.map((r) => {
          const json = r.json as { messages: ReadonlyArray<{ content: string }> }
          return json.messages.at(-1)?.content
        }),
        ["first", "second", "third"]
      )
      assert.strictEqual(yield* server.pending, 0)
    }))

  it.scopedLive("one queue across wire formats: each scenario is rendered for the path it is asked on", () =>
    Effect.gen(function*() {
      const server = yield* MockModelServer.make({ replies: [Reply.text("to claude"), Reply.text("to gpt")] })
      const claude = yield* liveProvider("anthropic", settings(server.baseUrl("anthropic")))
      const gpt = yield* liveProvider("openai-responses", settings(server.baseUrl("openai-responses")))
      assert.deepStrictEqual(collapse((yield* run(claude.stream(request()))).events)[0], { _tag: "TextDelta", text: "to claude" })
      assert.deepStrictEqual(collapse((yield* run(gpt.stream(request()))).events)[0], { _tag: "TextDelta", text: "to gpt" })
      assert.deepStrictEqual((yield* server.requests).map((r) => r.path), ["/v1/messages", "/v1/responses"])
    }))

  it.scopedLive("a request with no reply left gets a 400 that says so (not retried)", () =>
    Effect.gen(function*() {
      const server = yield* MockModelServer.make()
      const provider = yield* liveProvider("openai-chat", settings(server.baseUrl("openai-chat")))
      const { error } = yield* run(provider.stream(request()))
      assert.strictEqual(error?._tag, "ProviderInvalidRequest")
      assert.include(error?.message, "no reply scripted for request #1")
    }))

  it.live("closing the server's scope ends a connection it left hanging", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const server = yield* MockModelServer.make({ replies: [Reply.text("x", {}, { stallAfter: 1 })] }).pipe(Scope.extend(scope))
      const provider = yield* liveProvider("openai-chat", settings(server.baseUrl("openai-chat"), { timeouts: { firstByteMs: 60_000, stallMs: 60_000 } }))
      const fiber = yield* provider.stream(request()).pipe(Stream.runDrain, Effect.fork)
      yield* server.awaitRequests(1)
      yield* Scope.close(scope, Exit.void)
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error._tag : "", "ProviderConnectionLost")
    }))

  it.scopedLive("a consumer that stops early drops the connection (the server sees it close)", () =>
    Effect.gen(function*() {
      const server = yield* MockModelServer.make({ replies: [Reply.text(["a ", "b ", "c"], {}, { stallAfter: 3 })] })
      const provider = yield* liveProvider("anthropic", settings(server.baseUrl("anthropic"), { timeouts: { firstByteMs: 60_000, stallMs: 60_000 } }))
      const first = yield* provider.stream(request()).pipe(Stream.take(1), Stream.runCollect)
      assert.strictEqual(first.length, 1)
      yield* server.awaitClosed(1)
    }))

  it.scoped("childEnv points the BATON_* variables at the server", () =>
    Effect.gen(function*() {
      const server = yield* MockModelServer.make()
      assert.deepStrictEqual(server.childEnv("openai-chat", "m"), {
        BATON_PROVIDER: "openai-chat",
        BATON_BASE_URL: `${server.url}/v1`,
        BATON_MODEL: "m",
        BATON_API_KEY: "sk-mock-not-a-real-key"
      })
    }))
})
