import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, Option, Ref, TestClock } from "effect"
import { ConversationId, RunId, ToolCallId } from "../../src/domain/Ids.js"
import { ApprovalPending, ChunkSeqError, Conflict, EmptyResponse, InvalidInput, InvalidSummary, StoreBusy, StoreError, StreamBroken } from "../../src/domain/Errors.js"
import * as PE from "../../src/domain/ProviderError.js"
import {
  afterGivingUp,
  compactionBudgets,
  decide,
  driveBudgets,
  type Failure,
  reconnectsCarried,
  Recovery,
  spendsReconnect,
  startingAttempts,
  step,
  turnBudgets
} from "../../src/domain/Recovery.js"
import { policy } from "../../src/domain/RecoverySchedule.js"

const conv = ConversationId.make("c1")
const ladder = [250, 500, 1000, 2000, 4000]
const retry = (delayMs: number, reminder = false) => Recovery.Retry({ delayMs, reminder })
const failed = Recovery.Fail({ status: "failed" })
const reconnect = (attempt: number) => (attempt < 5 ? retry(ladder[attempt]!) : failed)

const table: ReadonlyArray<readonly [string, Failure, (attempt: number) => Recovery]> = [
  ["first-byte timeout", new PE.ProviderTimeout({ phase: "first_byte", afterMs: 1, message: "t" }), reconnect],
  ["stall timeout", new PE.ProviderTimeout({ phase: "stall", afterMs: 1, message: "t" }), reconnect],
  ["connection lost", new PE.ProviderConnectionLost({ message: "reset" }), reconnect],
  ["truncated stream", new PE.ProviderMalformed({ reason: "truncated", message: "cut" }), reconnect],
  ["bad json", new PE.ProviderMalformed({ reason: "bad_json", message: "x" }), reconnect],
  ["rate limited, no retry-after", new PE.ProviderRateLimited({ message: "429" }), reconnect],
  ["rate limited, retry-after 2 s", new PE.ProviderRateLimited({ retryAfterMs: 2000, message: "429" }), (n) => (n < 5 ? retry(2000) : failed)],
  ["rate limited, retry-after 60 s is capped", new PE.ProviderRateLimited({ retryAfterMs: 60_000, message: "429" }), (n) => (n < 5 ? retry(30_000) : failed)],
  ["rate limited, retry-after 0", new PE.ProviderRateLimited({ retryAfterMs: 0, message: "429" }), (n) => (n < 5 ? retry(0) : failed)],
  ["server error", new PE.ProviderServerError({ status: 503, message: "x" }), reconnect],
  ["overloaded", new PE.ProviderOverloaded({ message: "x" }), reconnect],
  ["overloaded with retry-after", new PE.ProviderOverloaded({ retryAfterMs: 1500, message: "x" }), (n) => (n < 5 ? retry(1500) : failed)],
  ["transient quota", new PE.ProviderTransientQuota({ message: "x" }), reconnect],
  ["permanent quota", new PE.ProviderQuotaExceeded({ message: "x" }), () => failed],
  ["auth", new PE.ProviderAuth({ status: 401, message: "x" }), () => Recovery.Fail({ status: "auth" })],
  ["invalid request", new PE.ProviderInvalidRequest({ status: 400, message: "x" }), () => failed],
  ["replay miss", new PE.ProviderReplayMiss({ requestHash: "h", message: "x" }), () => failed],
  // Compact; at the second refusal, send it without images; compact twice more; then give up.
  ["context overflow", new PE.ProviderContextOverflow({ message: "x" }), (n) => (n === 1 ? Recovery.RetryWithoutImages() : n < 4 ? Recovery.CompactThenRetry() : failed)],
  ["request too large (413)", new PE.ProviderRequestTooLarge({ message: "x" }), (n) => (n === 0 ? Recovery.RetryWithoutImages() : n <= 3 ? Recovery.CompactThenRetry() : failed)],
  ["conversation busy", new Conflict({ conversationId: conv, activity: "run", message: "x" }), (n) => (n < 3 ? Recovery.WaitBusy({ delayMs: 10_000 * 2 ** n }) : failed)],
  ["approval pending", new ApprovalPending({ conversationId: conv, toolCallIds: [ToolCallId.make("t")], message: "x" }), (n) => (n < 1 ? Recovery.ResolveStaleApproval() : failed)],
  ["empty response", new EmptyResponse({ message: "x" }), (n) => (n === 0 ? retry(500) : n === 1 ? retry(1000, true) : failed)],
  ["store error", new StoreError({ reason: "io", message: "x" }), () => failed],
  ["a run stream that broke (remote backend)", new StreamBroken({ message: "x" }), reconnect],
  ["a store transaction that lost a race", new StoreBusy({ message: "x" }), (n) => (n < 5 ? retry(20 * 2 ** n) : failed)],
  ["an answer that was no summary", new InvalidSummary({ toolCalls: 1, message: "x" }), (n) => (n < 4 ? retry(0) : failed)],
  ["a chunk out of sequence (a store bug)", new ChunkSeqError({ runId: RunId.make("r"), expected: 2, got: 3, message: "x" }), () => failed],
  ["invalid input", new InvalidInput({ message: "x" }), () => failed]
]

describe("Recovery.decide", () => {
  for (const [name, failure, expected] of table) {
    it(`${name} × attempts 0..6`, () => {
      for (let attempt = 0; attempt <= 6; attempt++) {
        assert.deepStrictEqual(decide(failure, attempt, turnBudgets), expected(attempt), `${name} at attempt ${attempt}`)
      }
    })
  }

  it("compaction requests get 3 reconnects", () => {
    const timeout = new PE.ProviderTimeout({ phase: "stall", afterMs: 1, message: "t" })
    const decisions = [0, 1, 2, 3].map((n) => decide(timeout, n, compactionBudgets))
    assert.deepStrictEqual(decisions, [retry(250), retry(500), retry(1000), failed])
  })

  it("a database out of reach is waited out by a cluster's Drive alone, on its own ladder; other store failures never", () => {
    const outage = new StoreError({ reason: "io", message: "timeout exceeded when trying to connect" })
    const ladder = [0, 1, 2, 3, 4, 5, 6, 40].map((n) => decide(outage, n, driveBudgets))
    assert.deepStrictEqual(ladder, [250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000].map((ms) => retry(ms)))
    assert.deepStrictEqual(decide(outage, 0, turnBudgets), failed)
    assert.deepStrictEqual(decide(new StoreError({ reason: "corrupt", message: "x" }), 0, driveBudgets), failed)
    assert.deepStrictEqual(decide(new PE.ProviderTimeout({ phase: "stall", afterMs: 1, message: "t" }), 0, driveBudgets), failed)
  })

  it("an unknown tag is terminal, never retried", () => {
    assert.deepStrictEqual(decide({ _tag: "SomethingNew", message: "from a newer server" } as unknown as Failure, 0, turnBudgets), failed)
  })

  it("step counts per category: timeouts do not spend the overflow budget", () => {
    const timeout = new PE.ProviderTimeout({ phase: "stall", afterMs: 1, message: "t" })
    const overflow = new PE.ProviderContextOverflow({ message: "x" })
    let attempts = {}
    const seen: Array<Recovery> = []
    for (const failure of [timeout, timeout, overflow, timeout, overflow]) {
      const next = step(attempts, failure, turnBudgets)
      attempts = next.attempts
      seen.push(next.decision)
    }
    assert.deepStrictEqual(seen, [retry(250), retry(500), Recovery.CompactThenRetry(), retry(1000), Recovery.RetryWithoutImages()])
  })

  it("images are stripped at the refusal the budget names (a policy parameter), and never by a budget without it", () => {
    const overflow = new PE.ProviderContextOverflow({ message: "x" })
    const at = (budgets: typeof turnBudgets) => [0, 1, 2, 3, 4].map((n) => decide(overflow, n, budgets)._tag)
    assert.deepStrictEqual(at({ ...turnBudgets, stripImagesAtRefusal: 1 }), ["RetryWithoutImages", "CompactThenRetry", "CompactThenRetry", "CompactThenRetry", "Fail"])
    assert.deepStrictEqual(at({ ...turnBudgets, stripImagesAtRefusal: 0 }), ["CompactThenRetry", "CompactThenRetry", "CompactThenRetry", "Fail", "Fail"])
  })
})

describe("one reconnect budget per user turn", () => {
  it("a task's runs share it: the next run starts from what the earlier ones spent, unless the count starts again with each run", () => {
    assert.strictEqual(reconnectsCarried(3, turnBudgets), 3)
    assert.strictEqual(reconnectsCarried(3, { ...turnBudgets, reconnectReset: "run" }), 0)
    assert.strictEqual(reconnectsCarried(3, compactionBudgets), 0, "a compaction's budget is its own")
    const timeout = new PE.ProviderTimeout({ phase: "stall", afterMs: 1, message: "t" })
    const first = step(startingAttempts(3), timeout, turnBudgets)
    assert.deepStrictEqual(first.decision, retry(2000), "the ladder goes on where the turn left it")
    assert.deepStrictEqual(step(first.attempts, timeout, turnBudgets).decision, retry(4000))
    assert.deepStrictEqual(step(startingAttempts(5), timeout, turnBudgets).decision, failed, "nothing left")
    assert.deepStrictEqual(step(startingAttempts(5), new PE.ProviderContextOverflow({ message: "x" }), turnBudgets).decision, Recovery.CompactThenRetry(), "other budgets untouched")
  })

  it("only failures of the reconnect category spend it", () => {
    assert.isTrue(spendsReconnect("ProviderTimeout"))
    assert.isTrue(spendsReconnect("ProviderServerError"))
    assert.isFalse(spendsReconnect("ProviderContextOverflow"))
    assert.isFalse(spendsReconnect("EmptyResponse"))
    assert.isFalse(spendsReconnect("SomethingNew"))
  })

  it("a run that gave up on a lost connection after issuing calls goes on with their results; anything else ends the task", () => {
    assert.strictEqual(afterGivingUp("ProviderConnectionLost", 1, turnBudgets), "continue")
    assert.strictEqual(afterGivingUp("ProviderConnectionLost", 0, turnBudgets), "end", "no calls: nothing owed, no progress")
    assert.strictEqual(afterGivingUp("ProviderAuth", 2, turnBudgets), "end")
    assert.strictEqual(afterGivingUp("ProviderInvalidRequest", 2, turnBudgets), "end")
    assert.strictEqual(afterGivingUp(undefined, 2, turnBudgets), "end")
    assert.strictEqual(afterGivingUp("ProviderTimeout", 1, { ...turnBudgets, continueWithIssuedCalls: false }), "end")
  })
})

describe("Recovery schedule", () => {
  const flaky = (failures: number, calls: Ref.Ref<number>) =>
    Ref.getAndUpdate(calls, (n) => n + 1).pipe(
      Effect.flatMap((n) =>
        n < failures ? Effect.fail(new PE.ProviderServerError({ status: 503, message: `failure ${n + 1}` })) : Effect.succeed("ok")
      )
    )

  it.effect("5 failures then success completes after exactly 7750 ms of test time", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make(0)
      const fiber = yield* Effect.fork(Effect.retry(flaky(5, calls), policy(turnBudgets)))
      yield* TestClock.adjust(249)
      assert.strictEqual(yield* Ref.get(calls), 1)
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* Ref.get(calls), 2)
      yield* TestClock.adjust(500 + 1000 + 2000 + 4000 - 1)
      assert.strictEqual(yield* Ref.get(calls), 5)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* Fiber.join(fiber), "ok")
      assert.strictEqual(yield* Ref.get(calls), 6)
    }))

  it.effect("6 failures fail with the last error", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make(0)
      const fiber = yield* Effect.fork(Effect.either(Effect.retry(flaky(6, calls), policy(turnBudgets))))
      yield* TestClock.adjust(7750)
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(yield* Ref.get(calls), 6)
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) assert.strictEqual(result.left.message, "failure 6")
    }))

  it.effect("auth is never retried", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make(0)
      const call = Ref.update(calls, (n) => n + 1).pipe(Effect.zipRight(Effect.fail(new PE.ProviderAuth({ status: 401, message: "no" }))))
      const result = yield* Effect.either(Effect.retry(call, policy(turnBudgets)))
      assert.isTrue(Either.isLeft(result))
      assert.strictEqual(yield* Ref.get(calls), 1)
    }))
})

