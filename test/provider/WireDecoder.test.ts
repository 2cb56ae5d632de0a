import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, Queue, Stream, TestClock } from "effect"
import { withTimeouts } from "../../src/services/provider/WireDecoder.js"

/**
 * The watchdog on the TestClock: a source the test feeds by hand, so every silence is exact. The
 * case the CLI hit: a stall timeout far shorter than the first-byte one (BATON_STALL_TIMEOUT_MS=500
 * with the 300 s default first-byte wait) must fire after its own silence, not the first-byte one.
 */
const watched = (timeouts: { readonly firstByteMs: number; readonly stallMs: number }) =>
  Effect.gen(function*() {
    const source = yield* Queue.unbounded<string>()
    const received: Array<string> = []
    const fiber = yield* Stream.fromQueue(source).pipe(
      withTimeouts(timeouts, "mock"),
      Stream.runForEach((s) => Effect.sync(() => void received.push(s))),
      Effect.either,
      Effect.fork
    )
    return { source, received, fiber }
  })

describe("withTimeouts", () => {
  it.scoped("a short stall timeout fires after its silence, though the first-byte wait is long", () =>
    Effect.gen(function*() {
      const { source, received, fiber } = yield* watched({ firstByteMs: 300_000, stallMs: 500 })
      yield* TestClock.adjust(100)
      yield* source.offer("one")
      yield* TestClock.adjust(400)
      yield* source.offer("two")
      yield* TestClock.adjust(499)
      assert.isNull(fiber.unsafePoll(), "still waiting 499 ms after the last chunk")
      yield* TestClock.adjust(1)
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(received, ["one", "two"])
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) {
        assert.strictEqual(result.left.phase, "stall")
        assert.strictEqual(result.left.afterMs, 500)
      }
    }))

  it.scoped("no first chunk → first_byte after firstByteMs, however short the stall timeout", () =>
    Effect.gen(function*() {
      const { fiber } = yield* watched({ firstByteMs: 2_000, stallMs: 500 })
      yield* TestClock.adjust(1_999)
      assert.isNull(fiber.unsafePoll())
      yield* TestClock.adjust(1)
      const result = yield* Fiber.join(fiber)
      assert.isTrue(Either.isLeft(result) && result.left.phase === "first_byte" && result.left.afterMs === 2_000)
    }))

  it.scoped("a stall timeout longer than the first-byte one still waits its own silence", () =>
    Effect.gen(function*() {
      const { source, fiber } = yield* watched({ firstByteMs: 500, stallMs: 3_000 })
      yield* TestClock.adjust(100)
      yield* source.offer("one")
      yield* TestClock.adjust(2_999)
      assert.isNull(fiber.unsafePoll())
      yield* TestClock.adjust(1)
      const result = yield* Fiber.join(fiber)
      assert.isTrue(Either.isLeft(result) && result.left.phase === "stall")
    }))
})
