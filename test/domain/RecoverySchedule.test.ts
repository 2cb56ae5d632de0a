import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option, Ref, TestClock } from "effect"
import { Conflict, EmptyResponse } from "../../src/domain/Errors.js"
import { ConversationId } from "../../src/domain/Ids.js"
import * as PE from "../../src/domain/ProviderError.js"
import { turnBudgets } from "../../src/domain/Recovery.js"
import { retry, skippableWait } from "../../src/domain/RecoverySchedule.js"
import { awaitSleeps } from "../support/testing.js"

const unavailable = (n: number) => new PE.ProviderServerError({ status: 503, message: `failure ${n}` })

/** Fails with the given failures in turn, then succeeds; every call and hook is logged in order. */
const scripted = (failures: ReadonlyArray<PE.ProviderError | EmptyResponse | Conflict>, log: Ref.Ref<ReadonlyArray<string>>) =>
  Effect.gen(function*() {
    const calls = yield* Ref.make(0)
    const note = (line: string) => Ref.update(log, (all) => [...all, line])
    const attempt = Effect.gen(function*() {
      const n = yield* Ref.getAndUpdate(calls, (c) => c + 1)
      yield* note(`attempt ${n}`)
      const failure = failures[n]
      if (failure !== undefined) return yield* Effect.fail(failure)
      return "done"
    })
    return { attempt, note }
  })

describe("RecoverySchedule.retry", () => {
  it.effect("announce, wait, prepare run in that order before each retry; the waits follow the policy", () =>
    Effect.gen(function*() {
      const log = yield* Ref.make<ReadonlyArray<string>>([])
      const { attempt, note } = yield* scripted([unavailable(1), unavailable(2)], log)
      const fiber = yield* Effect.fork(retry(attempt, {
        budgets: turnBudgets,
        announce: (step, delayMs) => note(`announce ${step.failure._tag} #${step.attempt} in ${delayMs}`),
        wait: (delayMs) => Effect.zipRight(note(`wait ${delayMs}`), Effect.sleep(delayMs)),
        prepare: (step) => note(`prepare #${step.attempt}`),
        orElse: () => Effect.succeed("gave up")
      }))
      yield* awaitSleeps()
      yield* TestClock.adjust(250)
      yield* awaitSleeps()
      yield* TestClock.adjust(500)
      assert.strictEqual(yield* Fiber.join(fiber), "done")
      assert.deepStrictEqual(yield* Ref.get(log), [
        "attempt 0", "announce ProviderServerError #0 in 250", "wait 250", "prepare #0",
        "attempt 1", "announce ProviderServerError #1 in 500", "wait 500", "prepare #1",
        "attempt 2"
      ])
    }))

  it.effect("orElse gets the last failure and the Fail decision, with no hook run for it", () =>
    Effect.gen(function*() {
      const log = yield* Ref.make<ReadonlyArray<string>>([])
      const auth = new PE.ProviderAuth({ status: 401, message: "bad key" })
      const { attempt, note } = yield* scripted([auth], log)
      const outcome = yield* retry(attempt, {
        budgets: turnBudgets,
        announce: () => note("announce"),
        orElse: (failure, step) => Effect.succeed(`${failure._tag}:${step.decision._tag === "Fail" ? step.decision.status : "?"}`)
      })
      assert.strictEqual(outcome, "ProviderAuth:auth")
      assert.deepStrictEqual(yield* Ref.get(log), ["attempt 0"])
    }))

  it.effect("categories count apart: a busy wait does not spend the reconnect budget", () =>
    Effect.gen(function*() {
      const log = yield* Ref.make<ReadonlyArray<string>>([])
      const busy = new Conflict({ conversationId: ConversationId.make("c"), activity: "run", message: "busy" })
      const { attempt } = yield* scripted([unavailable(1), busy, unavailable(2)], log)
      const delays = yield* Ref.make<ReadonlyArray<number>>([])
      const fiber = yield* Effect.fork(retry(attempt, {
        budgets: turnBudgets,
        wait: (ms) => Effect.zipRight(Ref.update(delays, (all) => [...all, ms]), Effect.sleep(ms)),
        orElse: Effect.fail
      }))
      yield* TestClock.adjust(250 + 10_000 + 500)
      assert.strictEqual(yield* Fiber.join(fiber), "done")
      assert.deepStrictEqual(yield* Ref.get(delays), [250, 10_000, 500])
    }))

  it.effect("jitter keeps each wait within ±20 % of the policy's", () =>
    Effect.gen(function*() {
      const log = yield* Ref.make<ReadonlyArray<string>>([])
      const { attempt } = yield* scripted([unavailable(1), unavailable(2), unavailable(3)], log)
      const delays = yield* Ref.make<ReadonlyArray<number>>([])
      const fiber = yield* Effect.fork(retry(attempt, {
        budgets: turnBudgets,
        jitter: true,
        wait: (ms) => Ref.update(delays, (all) => [...all, ms]),
        orElse: Effect.fail
      }))
      assert.strictEqual(yield* Fiber.join(fiber), "done")
      const seen = yield* Ref.get(delays)
      ;[250, 500, 1000].forEach((planned, i) => assert.isTrue(seen[i]! >= planned * 0.8 && seen[i]! <= planned * 1.2, `${seen[i]} vs ${planned}`))
    }))
})

describe("RecoverySchedule.skippableWait", () => {
  it.effect("a skip ends the current wait at once; the next wait is whole again", () =>
    Effect.gen(function*() {
      const skip = yield* Ref.make(yield* Deferred.make<void>())
      const wait = skippableWait(skip)
      const first = yield* Effect.fork(wait(30_000))
      yield* awaitSleeps()
      yield* Effect.flatMap(Ref.get(skip), (signal) => Deferred.succeed(signal, undefined))
      yield* Fiber.join(first)
      const second = yield* Effect.fork(wait(1_000))
      yield* awaitSleeps()
      yield* TestClock.adjust(999)
      assert.isTrue(Option.isNone(yield* Fiber.poll(second)))
      yield* TestClock.adjust(1)
      yield* Fiber.join(second)
    }))
})
