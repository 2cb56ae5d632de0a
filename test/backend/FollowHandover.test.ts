import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Stream } from "effect"
import type { Chunk } from "../../src/domain/Events.js"
import { turnBudgets } from "../../src/domain/Recovery.js"
import { makeActorRegistry } from "../../src/programs/backend/ActorRegistry.js"
import { programs } from "../../src/programs/backend/BackendLocal.js"
import { Command, makeConversationActors } from "../../src/programs/backend/ConversationActor.js"
import { layerScripted, Turn } from "../../src/services/provider/Scripted.js"
import { layerPolling, RunTail } from "../../src/services/RunTail.js"
import { Store } from "../../src/services/Store.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { collect, eventually, input, user } from "../support/testing.js"

/**
 * A run's job can stop before its run does: in a cluster, a runner that refreshed its shard locks
 * late loses the conversation's shard (its Drive is interrupted, the job with it) and the shard's
 * next owner — often the same runner — adopts the run. A client following the stopped job's live
 * log must go on to the run's end, not wait forever on a log that publishes nothing more.
 */
describe("following a run whose job stops before the run does", () => {
  it.live("the follower goes on from the seq it reached and ends with the adopted run, each seq once", () =>
    Effect.gen(function*() {
      const store = yield* Store
      // A cluster's actors: they hear of other runners' commits (here, by looking again on a timer).
      const actors = yield* makeConversationActors({ budgets: turnBudgets, owner: "runner-a", tail: yield* RunTail })
      const registry = yield* makeActorRegistry(actors, { idleTime: "1 minute", takeover: true })
      const conversation = yield* store.createConversation({ system_prompt: "" })

      const runId = yield* registry.ask(conversation.id, Command.Send({ input: input(user("go")) }))
      const follower = yield* Effect.fork(collect(Stream.unwrap(actors.follow(runId, 0))))
      yield* eventually(
        Effect.map(collect(store.readChunks(runId, 0)), (chunks) => chunks.some((c) => c.type === "text_delta")),
        "the first attempt streamed its partial answer"
      )

      // What a lost shard does: the Drive waiting out the run is interrupted, and the job with it.
      yield* Effect.timeoutOption(actors.awaitRun(runId), "100 millis")
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
