import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Stream } from "effect"
import { StoreError } from "../../src/domain/Errors.js"
import type { Chunk } from "../../src/domain/Events.js"
import { turnBudgets } from "../../src/domain/Recovery.js"
import { makeActorRegistry } from "../../src/programs/backend/ActorRegistry.js"
import { programs } from "../../src/programs/backend/BackendLocal.js"
import { Command, makeConversationActors } from "../../src/programs/backend/ConversationActor.js"
import { driveRun } from "../../src/programs/backend/ConversationEntity.js"
import { layerScripted, Turn } from "../../src/services/provider/Scripted.js"
import { layerPolling, RunTail } from "../../src/services/RunTail.js"
import { Store } from "../../src/services/Store.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { collect, eventually, input, user } from "../support/testing.js"

/** A cluster's actors (they hear of other runners' commits by looking again on a timer), one run sent and followed from its start. */
const sentAndFollowed = Effect.gen(function*() {
  const store = yield* Store
  const actors = yield* makeConversationActors({ budgets: turnBudgets, owner: "runner-a", tail: yield* RunTail })
  const registry = yield* makeActorRegistry(actors, { idleTime: "1 minute", takeover: true })
  const conversation = yield* store.createConversation({ system_prompt: "" })
  const runId = yield* registry.ask(conversation.id, Command.Send({ input: input(user("go")) }))
  const follower = yield* Effect.fork(collect(Stream.unwrap(actors.follow(runId, 0))))
  return { store, actors, registry, conversation, runId, follower }
})

/**
 * Sent and followed, the first attempt's partial answer streamed, then what a lost shard does: the
 * Drive waiting out the run is interrupted, and the job with it; the run is left to its next owner.
 */
const partialThenShardLost = Effect.gen(function*() {
  const sent = yield* sentAndFollowed
  yield* eventually(
    Effect.map(collect(sent.store.readChunks(sent.runId, 0)), (chunks) => chunks.some((c) => c.type === "text_delta")),
    "the first attempt streamed its partial answer"
  )
  yield* Effect.timeoutOption(sent.actors.awaitRun(sent.runId), "100 millis")
  return sent
})

/**
 * A run's job can stop before its run does: in a cluster, a runner that refreshed its shard locks
 * late loses the conversation's shard (its Drive is interrupted, the job with it) and the shard's
 * next owner — often the same runner — adopts the run. A client following the stopped job's live
 * log must go on to the run's end, not wait forever on a log that publishes nothing more.
 */
describe("following a run whose job stops before the run does", () => {
  it.live("the follower goes on from the seq it reached and ends with the adopted run, each seq once", () =>
    Effect.gen(function*() {
      const { conversation, follower, registry, runId, store } = yield* partialThenShardLost
      assert.strictEqual((yield* store.getRun(runId)).status, "running", "the run is left to its next owner")

      yield* registry.ask(conversation.id, Command.Adopt({ runId, thinking: undefined }))
      const chunks: ReadonlyArray<Chunk> = yield* Fiber.join(follower).pipe(Effect.timeoutFail({
        duration: "10 seconds",
        onTimeout: () => new Error("the follower of the stopped job never ended")
      }))
      assert.strictEqual(chunks.at(-1)?.type, "stop_reason")
      assert.deepStrictEqual(chunks.map((c) => c.seq), chunks.map((_, i) => i + 1), "contiguous seqs, none twice")
      assert.deepStrictEqual(chunks.map((c) => c.seq), (yield* collect(store.readChunks(runId, 0))).map((c) => c.seq))
    }).pipe(
      Effect.provide(programs),
      Effect.provide(Layer.mergeAll(layerMemory, layerPolling, layerScripted([Turn.stall({ text: "part" }), Turn.text("done")]))),
      Effect.scoped
    ))
})

/**
 * The memory store, holding the first commit of a streamed delta until `release`: the job is then
 * inside a commit, which an interrupt waits out (as a commit waiting for a busy database does).
 */
const layerGated = (entered: Deferred.Deferred<void>, release: Deferred.Deferred<void>) =>
  Layer.effect(
    Store,
    Effect.map(Store, (store): Store["Type"] => {
      let armed = true
      return {
        ...store,
        commit: (write) =>
          Effect.suspend(() => {
            if (!armed || !(write.chunks ?? []).some((c) => c.type === "text_delta")) return store.commit(write)
            armed = false
            return Effect.zipRight(Effect.zipRight(Deferred.succeed(entered, undefined), Deferred.await(release)), store.commit(write))
          })
      }
    })
  ).pipe(Layer.provide(layerMemory))

/**
 * In a cluster a run is driven by its Drive, an entity request whose answer is stored for good. A
 * runner that refreshes its shard locks late loses the conversation's shard: the Drive is
 * interrupted, and the job with it — once the commit it is in has gone through, which under load
 * takes a while. The shard comes back (often to the same runner) and the Drive is delivered again
 * while that job is still stopping. The Drive must go on until the run has ended, not answer when
 * the old job stops: answered, it is never delivered again, and the run stays `running` for ever.
 */
describe("a Drive delivered again while the job it replaces is still stopping", () => {
  it.live("adopts the run once the old job has stopped and answers only when the run has ended", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      yield* handover(entered, release).pipe(
        Effect.provide(programs),
        Effect.provide(Layer.mergeAll(layerGated(entered, release), layerPolling, layerScripted([Turn.stall({ text: "part" }), Turn.text("done")])))
      )
    }).pipe(Effect.scoped))
})

const handover = (entered: Deferred.Deferred<void>, release: Deferred.Deferred<void>) =>
  Effect.gen(function*() {
    const { actors, conversation, follower, registry, runId, store } = yield* sentAndFollowed
    // `ask`, telling `done` once the actor has taken the Drive's Adopt (the Drive then waits out the job).
    const asking = (done: Deferred.Deferred<void>) => (command: Command) => Effect.tap(registry.ask(conversation.id, command), () => Deferred.succeed(done, undefined))
    const waiting = yield* Deferred.make<void>()
    const first = yield* Effect.fork(driveRun(actors, asking(waiting), runId, undefined))
    yield* Deferred.await(entered)
    yield* Deferred.await(waiting)

    // The shard is lost: the first Drive is interrupted; its job stops once its commit is through.
    const lost = yield* Effect.fork(Fiber.interrupt(first))
    // The shard is back: the Drive, delivered again, is handled while the old job is still stopping.
    const adopted = yield* Deferred.make<void>()
    const second = yield* Effect.fork(driveRun(actors, asking(adopted), runId, undefined))
    yield* Deferred.await(adopted)
    yield* Deferred.succeed(release, undefined)
    yield* Fiber.join(lost)

    const driven = yield* Fiber.await(second).pipe(Effect.timeoutFail({
      duration: "10 seconds",
      onTimeout: () => new Error("the second Drive never answered")
    }))
    assert.isTrue(Exit.isSuccess(driven), `the second Drive answers only when the run has ended (got ${String(driven)})`)
    const run = yield* store.getRun(runId)
    assert.strictEqual(run.status, "completed", "the run was adopted and ended, not left running")
    assert.strictEqual(run.stopReason, "end_turn")
    const chunks: ReadonlyArray<Chunk> = yield* Fiber.join(follower).pipe(Effect.timeoutFail({
      duration: "10 seconds",
      onTimeout: () => new Error("the follower never ended")
    }))
    assert.strictEqual(chunks.at(-1)?.type, "stop_reason")
    assert.deepStrictEqual(chunks.map((c) => c.seq), (yield* collect(store.readChunks(runId, 0))).map((c) => c.seq), "each seq once")
    assert.isTrue(chunks.some((c) => c.type === "request_end" && c.status === "retrying"), "the adoption reconnected")
  })

/** The memory store, its claimRun failing as a database out of reach does, `times` times. */
const layerOutOfReach = (times: number) =>
  Layer.effect(
    Store,
    Effect.map(Store, (store): Store["Type"] => {
      let left = times
      return {
        ...store,
        claimRun: (id, owner) =>
          Effect.suspend(() =>
            left-- > 0 ? Effect.fail(new StoreError({ reason: "io", message: "timeout exceeded when trying to connect" })) : store.claimRun(id, owner)
          )
      }
    })
  ).pipe(Layer.provide(layerMemory))

describe("a Drive meeting a database out of reach", () => {
  it.live("waits it out and adopts the run, instead of answering with the failure and leaving the run running", () =>
    Effect.gen(function*() {
      const { actors, conversation, follower, registry, runId, store } = yield* partialThenShardLost
      const driven = yield* Effect.exit(driveRun(actors, (command) => registry.ask(conversation.id, command), runId, undefined)).pipe(Effect.timeoutFail({
        duration: "10 seconds",
        onTimeout: () => new Error("the Drive never answered")
      }))
      assert.isTrue(Exit.isSuccess(driven), `the Drive answers only when the run has ended (got ${String(driven)})`)
      assert.deepStrictEqual([(yield* store.getRun(runId)).status, (yield* store.getRun(runId)).stopReason], ["completed", "end_turn"])
      assert.strictEqual((yield* Fiber.join(follower)).at(-1)?.type, "stop_reason")
    }).pipe(
      Effect.provide(programs),
      Effect.provide(Layer.mergeAll(layerOutOfReach(2), layerPolling, layerScripted([Turn.stall({ text: "part" }), Turn.text("done")]))),
      Effect.scoped
    ))
})
