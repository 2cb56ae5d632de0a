import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { makeFairRwLock } from "../../src/services/tools/FairLock.js"
import { settle } from "../support/FakeTools.js"

/** A small deterministic PRNG (mulberry32), so a failing round can be replayed. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6D2B79F5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

describe("FairRwLock", () => {
  it.effect("a reader that arrives behind a queued writer waits for it (no barging)", () =>
    Effect.gen(function*() {
      const lock = yield* makeFairRwLock
      const holdReader = yield* Deferred.make<void>()
      const log: Array<string> = []
      const r1 = yield* Effect.fork(lock.withRead(Effect.zipRight(Effect.sync(() => void log.push("r1")), Deferred.await(holdReader))))
      yield* settle
      const w = yield* Effect.fork(lock.withWrite(Effect.sync(() => void log.push("w"))))
      yield* settle
      const r2 = yield* Effect.fork(lock.withRead(Effect.sync(() => void log.push("r2"))))
      yield* settle
      assert.deepStrictEqual(log, ["r1"])
      assert.deepStrictEqual(yield* lock.state, { readers: 1, writer: false, queued: 2 })
      yield* Deferred.succeed(holdReader, undefined)
      yield* Effect.forEach([r1, w, r2], Fiber.join)
      assert.deepStrictEqual(log, ["r1", "w", "r2"])
      assert.deepStrictEqual(yield* lock.state, { readers: 0, writer: false, queued: 0 })
    }))

  it.effect("a writer leaving the queue lets the readers queued behind it in", () =>
    Effect.gen(function*() {
      const lock = yield* makeFairRwLock
      const running = lock.unsafeEnqueue(false)
      const writer = lock.unsafeEnqueue(true)
      const reader = lock.unsafeEnqueue(false)
      const admitted = yield* Effect.fork(reader.granted)
      yield* writer.release
      yield* Fiber.join(admitted)
      assert.deepStrictEqual(yield* lock.state, { readers: 2, writer: false, queued: 0 })
      yield* running.release
      yield* reader.release
      assert.deepStrictEqual(yield* lock.state, { readers: 0, writer: false, queued: 0 })
    }))

  it.effect("a grant that arrives just before an interrupt is handed back", () =>
    Effect.gen(function*() {
      const lock = yield* makeFairRwLock
      const writer = lock.unsafeEnqueue(true)
      const reader = lock.unsafeEnqueue(false)
      yield* writer.release // grants the reader, whose holder never runs
      assert.deepStrictEqual(yield* lock.state, { readers: 1, writer: false, queued: 0 })
      yield* reader.release
      yield* reader.release // idempotent
      assert.deepStrictEqual(yield* lock.state, { readers: 0, writer: false, queued: 0 })
    }))

  it.effect("random readers and writers with random interrupts: exclusive, in arrival order, nothing leaks", () =>
    Effect.gen(function*() {
      for (let round = 0; round < 20; round++) {
        const random = prng(round + 1)
        const lock = yield* makeFairRwLock
        let readers = 0
        let writer = false
        const violations: Array<string> = []
        const admitted: Array<number> = []
        const interrupted = new Set<number>()
        const fibers = []
        for (let i = 0; i < 60; i++) {
          const write = random() < 0.3
          const ticket = lock.unsafeEnqueue(write)
          // Forked uninterruptibly so `ensuring` is in place even for a fiber interrupted before it runs.
          const body = Effect.interruptible(Effect.gen(function*() {
            yield* ticket.granted
            admitted.push(i)
            if (write ? writer || readers > 0 : writer) violations.push(`${i} entered while busy`)
            if (write) writer = true
            else readers++
            yield* Effect.yieldNow().pipe(Effect.ensuring(Effect.sync(() => {
              if (write) writer = false
              else readers--
            })))
          })).pipe(Effect.ensuring(ticket.release))
          fibers.push(yield* Effect.uninterruptible(Effect.fork(body)))
        }
        for (let i = 0; i < fibers.length; i++) {
          if (random() < 0.25) {
            interrupted.add(i)
            yield* Fiber.interrupt(fibers[i]!)
          }
        }
        yield* Effect.forEach(fibers, Fiber.await)
        const expected = admitted.filter((i) => !interrupted.has(i))
        assert.deepStrictEqual(violations, [], `round ${round}`)
        assert.deepStrictEqual(expected, [...expected].sort((a, b) => a - b), `round ${round}: arrival order`)
        assert.deepStrictEqual(yield* lock.state, { readers: 0, writer: false, queued: 0 }, `round ${round}`)
      }
    }))
})
