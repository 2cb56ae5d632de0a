import { assert, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as PE from "../../../src/domain/ProviderError.js"
import type { Backend } from "../../../src/services/Backend.js"
import { ProviderScript, type ScriptEntry, Turn } from "../../../src/services/provider/Scripted.js"
import { collect, input, otid, user } from "../testing.js"

type WithBackend = <A, E>(
  script: ReadonlyArray<ScriptEntry>,
  body: (backend: Backend["Type"]) => Effect.Effect<A, E, Backend | ProviderScript>
) => Effect.Effect<A, unknown>

const settings = { system_prompt: "be brief", tools: [{ name: "Read", description: "read", parameters: { type: "object" } }] }

const refused = Turn.fail(new PE.ProviderAuth({ status: 401, message: "invalid x-api-key" }))

const prompts = (items: ReadonlyArray<{ readonly type: string }>, text: string) =>
  items.filter((m) => m.type === "user_message" && "content" in m && m.content === text).length

const tagOf = <A, E extends { readonly _tag: string }>(result: Either.Either<A, E>) => (Either.isLeft(result) ? result.left._tag : "ok")

/** `SendInput.retry`: after an `auth` or `error` stop the conversation re-runs as it stands, its prompt never sent twice. */
export const rerunContract = (withBackend: WithBackend) => {
  it.effect("after an auth stop a retry re-runs the context: the prompt reaches the model and the history once; its otid is idempotent", () =>
    withBackend([refused, Turn.text("hello")], (backend) =>
      Effect.gen(function*() {
        const script = yield* ProviderScript
        const conv = yield* backend.createConversation(settings)
        const first = yield* collect(backend.send(conv.id, input(user("go"))))
        const refusedStop = first.at(-1)!
        assert.strictEqual(refusedStop.type === "stop_reason" && refusedStop.reason, "auth")
        const retry = otid("retry")
        const again = yield* collect(backend.send(conv.id, { messages: [], retry }))
        const stop = again.at(-1)!
        assert.strictEqual(stop.type === "stop_reason" && stop.reason, "end_turn")
        const requests = yield* script.requests
        assert.strictEqual(requests.length, 2)
        assert.strictEqual(prompts(requests[1]!.history, "go"), 1)
        assert.deepStrictEqual(requests[1]!.history.map((m) => m.type), ["user_message"])
        assert.strictEqual(prompts((yield* backend.history(conv.id)).map((s) => s.item), "go"), 1)
        // The same retry again (a client that lost the stream) is the run it started: nothing re-runs.
        const replay = yield* collect(backend.send(conv.id, { messages: [], retry }))
        assert.strictEqual(replay[0]?.run_id, again[0]?.run_id)
        assert.strictEqual((yield* script.requests).length, 2)
      })))

  it.effect("a retry after an error stop re-runs too; an empty send, a retry with messages or after end_turn is InvalidInput and writes nothing", () =>
    withBackend([Turn.fail(new PE.ProviderInvalidRequest({ status: 400, message: "bad request" })), Turn.text("ok")], (backend) =>
      Effect.gen(function*() {
        const script = yield* ProviderScript
        const conv = yield* backend.createConversation(settings)
        const first = yield* collect(backend.send(conv.id, input(user("go"))))
        const stop = first.at(-1)!
        assert.strictEqual(stop.type === "stop_reason" && stop.reason, "error")
        assert.strictEqual(tagOf(yield* Effect.either(collect(backend.send(conv.id, { messages: [] })))), "InvalidInput")
        assert.strictEqual(tagOf(yield* Effect.either(collect(backend.send(conv.id, { messages: [user("more")], retry: otid("r") })))), "InvalidInput")
        yield* collect(backend.send(conv.id, { messages: [], retry: otid("r") }))
        assert.strictEqual(prompts((yield* script.requests)[1]!.history, "go"), 1)
        const before = (yield* backend.history(conv.id)).length
        assert.strictEqual(tagOf(yield* Effect.either(collect(backend.send(conv.id, { messages: [], retry: otid("r") })))), "InvalidInput")
        assert.strictEqual((yield* backend.history(conv.id)).length, before)
        assert.strictEqual((yield* script.requests).length, 2)
      })))

  it.effect("a retry while calls wait for results is ApprovalPending", () =>
    withBackend([Turn.toolCalls([{ id: "c1", name: "Read", args: { file_path: "a" } }])], (backend) =>
      Effect.gen(function*() {
        const conv = yield* backend.createConversation(settings)
        yield* collect(backend.send(conv.id, input(user("read"))))
        assert.strictEqual(tagOf(yield* Effect.either(collect(backend.send(conv.id, { messages: [], retry: otid("r") })))), "ApprovalPending")
      })))
}
