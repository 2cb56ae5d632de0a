import { assert, describe, it } from "@effect/vitest"
import { Chunk as EChunk, Clock, Duration, Effect, Fiber, Layer, TestClock } from "effect"
import type { Chunk } from "../../src/domain/Events.js"
import { Otid } from "../../src/domain/Ids.js"
import { layerCluster } from "../../src/programs/backend/BackendCluster.js"
import { Backend } from "../../src/services/Backend.js"
import { layerScripted, ProviderScript, Turn } from "../../src/services/provider/Scripted.js"
import { Store } from "../../src/services/Store.js"
import { oneRunner } from "../support/oneRunner.js"
import { onPostgres } from "../support/pgDatabase.js"
import { collect, eventually, input, user } from "../support/testing.js"

/** A period no other timer of the runner uses, so the sweep's own sleep can be told apart. */
const SWEEP_EVERY = Duration.seconds(7)

/** One more look: the clock moves one period once the sweep sleeps again, i.e. its last look is done. */
const nextLook = Effect.gen(function*() {
  const now = yield* Clock.currentTimeMillis
  const asleep = EChunk.some(yield* TestClock.sleeps(), (at) => at === now + Duration.toMillis(SWEEP_EVERY))
  if (asleep) yield* TestClock.adjust(SWEEP_EVERY)
  return asleep
})

/**
 * The cluster marks a persisted request read before it delivers it; a Drive it then skips (its shard
 * lost and re-taken under load) is read again only after minutes, and its run stays `running` with
 * no job anywhere. The runner's sweep resumes such a run, and leaves a run whose job is live alone.
 */
onPostgres("the runner's sweep of runs nobody drives", () =>
  describe("the runner's sweep of runs nobody drives", () =>
    it.scoped("resumes a run left running with no job and no Drive; a live run keeps its one job", () =>
      Effect.gen(function*() {
        const backend = yield* Backend
        const store = yield* Store
        const script = yield* ProviderScript

        // A healthy run: its job is live here, its answer held mid-stream.
        const healthy = yield* store.createConversation({ system_prompt: "" })
        const healthyStream = yield* Effect.fork(collect(backend.send(healthy.id, input(user("go")))))
        yield* script.awaitRequests(1)
        const healthyRun = yield* Effect.flatMap(store.activeRun(healthy.id), (run) => run)

        // A stranded run: admitted, its Drive lost: no job anywhere, nothing on its way to adopt it.
        const stranded = yield* store.createConversation({ system_prompt: "" })
        const { run } = yield* store.createRun(stranded.id, Otid.make("otid-stranded"), "turn", { owner: "127.0.0.1:1" })
        const follower = yield* Effect.fork(collect(backend.streamRun(run.id)))

        // Each look is one period of the backend's clock; the second that finds the run unchanged resumes it.
        yield* eventually(
          Effect.zipRight(nextLook, Effect.map(store.getRun(run.id), (r) => r.status !== "running")),
          "the stranded run was resumed and ended"
      )
        const ended = yield* store.getRun(run.id)
        assert.deepStrictEqual([ended.status, ended.stopReason], ["completed", "end_turn"])
        const chunks: ReadonlyArray<Chunk> = yield* Fiber.join(follower)
        assert.strictEqual(chunks.at(-1)?.type, "stop_reason", "the stranded run's follower ended")

        // More looks: the live run is never handed a second job, its model asked once.
        for (let i = 0; i < 3; i++) yield* eventually(nextLook, "the sweep looked again")
        assert.strictEqual((yield* store.getRun(healthyRun.id)).status, "running")
        assert.strictEqual((yield* script.requests).length, 2, "one request for each run, none twice")
        const begins = (yield* collect(store.readChunks(healthyRun.id, 0))).filter((c) => c.type === "request_begin")
        assert.strictEqual(begins.length, 1, "the live run's request began once")
        // Ended before the runner stops: with its answer still held, the runner's shutdown outlasted the test.
        yield* backend.cancel(healthy.id)
        assert.strictEqual((yield* Fiber.join(healthyStream)).at(-1)?.type, "stop_reason")
      }).pipe(
        Effect.provide(
          layerCluster({ runner: "127.0.0.1:0", sweepEvery: SWEEP_EVERY }).pipe(
            Layer.provideMerge(layerScripted([Turn.stall({ text: "part" }), Turn.text("done")])),
            Layer.provideMerge(oneRunner)
          )
        )
      ))
  ))
