import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, Stream, TestClock } from "effect"
import { type BackendError, Conflict } from "../../src/domain/Errors.js"
import type { Chunk } from "../../src/domain/Events.js"
import type { RunId } from "../../src/domain/Ids.js"
import type { Approver } from "../../src/programs/session/ApprovalGate.js"
import { open } from "../../src/programs/session/Session.js"
import { Backend } from "../../src/services/Backend.js"
import { Turn } from "../../src/services/provider/Scripted.js"
import { assertOrdering, byType, sessionLayer } from "../support/sessionHarness.js"
import { awaitSleeps, collect } from "../support/testing.js"

const allow: Approver = () => Effect.succeed("allow")

/**
 * The session's backend with its streams cut: the i-th stream the session reads (a send, then each
 * streamRun) is shaped by `cuts[i]` (absent: left whole); every streamRun is recorded.
 */
const withCutStreams = (cuts: ReadonlyArray<(chunks: Stream.Stream<Chunk, BackendError>) => Stream.Stream<Chunk, BackendError>>) =>
  Effect.gen(function*() {
    const inner = yield* Backend
    const follows: Array<{ readonly runId: RunId; readonly after: number }> = []
    let opened = 0
    const cut = (chunks: Stream.Stream<Chunk, BackendError>) => {
      const shape = cuts[opened++]
      return shape === undefined ? chunks : shape(chunks)
    }
    const backend = Backend.of({
      ...inner,
      send: (id, input) => cut(inner.send(id, input)),
      streamRun: (runId, options) => {
        follows.push({ runId, after: options?.after ?? 0 })
        return cut(inner.streamRun(runId, options))
      }
    })
    return { backend, follows, opened: () => opened }
  })

const seqs = (events: ReadonlyArray<{ readonly seq?: number }>) => events.flatMap((e) => (e.seq !== undefined ? [e.seq] : []))

const words = Array.from({ length: 12 }, (_, i) => `w${i} `)

describe("Session: a run stream that breaks off", () => {
  it.scoped("is followed again after the last seq read, 250 ms later; usage still reaches the stream with its request_end", () =>
    Effect.gen(function*() {
      // The first stream ends right after token_usage, before its request_end.
      const { backend, follows } = yield* withCutStreams([Stream.takeWhile((c) => c.type !== "request_end")])
      const session = yield* open({ approver: allow }).pipe(Effect.provideService(Backend, backend))
      const fiber = yield* Effect.fork(collect(session.run("hi")))
      yield* awaitSleeps()
      yield* TestClock.adjust(249)
      assert.strictEqual(follows.length, 0)
      yield* TestClock.adjust(1)
      const events = yield* Fiber.join(fiber)
      assertOrdering(events)
      assert.strictEqual(follows.length, 1)
      const model = seqs(events)
      assert.deepStrictEqual(model, Array.from({ length: model.length }, (_, i) => i + 1), "every seq once, in order")
      const usage = events.findIndex((e) => e.type === "token_usage")
      assert.strictEqual(events[usage + 1]?.type, "request_end")
      assert.deepStrictEqual(byType(events, "assistant_message").map((m) => m.content), [words.join("")])
      const stop = events.at(-1)!
      assert.strictEqual(stop.type === "stop_reason" && stop.reason, "end_turn")
    }).pipe(Effect.provide(sessionLayer("memory", [Turn.text(words)]))))

  it.scoped("counts its reconnects per run, progress or not: after 5 (250 … 4000 ms) the task fails with StreamBroken", () =>
    Effect.gen(function*() {
      const { backend, follows } = yield* withCutStreams([Stream.take(2), ...Array.from({ length: 5 }, () => Stream.take(1))])
      const session = yield* open({ approver: allow }).pipe(Effect.provideService(Backend, backend))
      const fiber = yield* Effect.fork(Effect.either(collect(session.run("hi"))))
      for (const [i, wait] of [250, 500, 1000, 2000, 4000].entries()) {
        yield* awaitSleeps()
        yield* TestClock.adjust(wait - 1)
        assert.strictEqual(follows.length, i)
        yield* TestClock.adjust(1)
      }
      const result = yield* Fiber.join(fiber)
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) {
        assert.strictEqual(result.left._tag, "StreamBroken")
        assert.strictEqual(result.left.message, "the run's stream ended without a stop_reason")
      }
      assert.deepStrictEqual(follows.map((f) => f.after), [2, 3, 4, 5, 6])
      assert.isFalse(yield* session.isRunning)
    }).pipe(Effect.provide(sessionLayer("memory", [Turn.text(words)]))))

  it.scoped("that ends before its first chunk fails the task at once: there is no run to follow", () =>
    Effect.gen(function*() {
      const { backend, follows } = yield* withCutStreams([Stream.take(0)])
      const session = yield* open({ approver: allow }).pipe(Effect.provideService(Backend, backend))
      const result = yield* Effect.either(collect(session.run("hi")))
      assert.isTrue(Either.isLeft(result) && result.left._tag === "StreamBroken" && result.left.runId === undefined)
      assert.strictEqual(follows.length, 0)
    }).pipe(Effect.provide(sessionLayer("memory", [Turn.text(words)]))))
})

describe("Session: a busy conversation", () => {
  it.scoped("is waited for 10, 20, 40 s over the whole task, not per run: the fourth Conflict ends the task", () =>
    Effect.gen(function*() {
      const inner = yield* Backend
      const conversation = yield* inner.createConversation({ system_prompt: "" })
      const busy = Stream.fail(new Conflict({ conversationId: conversation.id, activity: "run", message: "busy" }))
      // Turn 1: busy twice, then its run asks for a tool; turn 2: busy twice more.
      const { backend, opened } = yield* withCutStreams([() => busy, () => busy, (chunks) => chunks, () => busy, () => busy])
      const session = yield* open({ conversationId: conversation.id, approver: allow }).pipe(Effect.provideService(Backend, backend))
      const fiber = yield* Effect.fork(Effect.either(collect(session.run("hi"))))
      for (const [i, wait] of [10_000, 20_000, 40_000].entries()) {
        yield* awaitSleeps()
        yield* TestClock.adjust(wait - 1)
        assert.strictEqual(opened(), [1, 2, 4][i])
        yield* TestClock.adjust(1)
      }
      const result = yield* Fiber.join(fiber)
      assert.isTrue(Either.isLeft(result) && result.left._tag === "Conflict")
      assert.strictEqual(opened(), 5)
    }).pipe(Effect.provide(sessionLayer("memory", [Turn.toolCalls([{ id: "c1", name: "LS", args: {} }]), Turn.text("done")]))))
})
