import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { Otid } from "../../src/domain/Ids.js"
import { followStored, makeRunLog } from "../../src/programs/backend/RunLog.js"
import { Store } from "../../src/services/Store.js"
import { layerMemory } from "../../src/services/store/Memory.js"

/** A run with its first chunk committed, as its owner left it. */
const started = Effect.gen(function*() {
  const store = yield* Store
  const conversation = yield* store.createConversation({ system_prompt: "" })
  const { run } = yield* store.createRun(conversation.id, Otid.make("o"), "turn")
  const log = yield* makeRunLog(store, { conversationId: conversation.id, runId: run.id, lastSeq: 0 })
  yield* log.emit([{ event: { type: "request_begin", attempt: 0 } }])
  return { log, run, store }
})

describe("followStored: a run owned by another process, followed from the Store", () => {
  it.effect("a run that ends between a read that found nothing and the status check still delivers its last chunks and its stop_reason", () =>
    Effect.gen(function*() {
      const { log, run, store } = yield* started
      // The owner commits its end (with the run's status) just after this follower's read came back empty.
      let reads = 0
      const racing: Store["Type"] = {
        ...store,
        readChunks: (runId, after) =>
          ++reads === 2
            ? Stream.unwrap(Effect.as(Effect.orDie(
              log.emit([{ event: { type: "request_end", status: "ok", attempt: 0 } }, { event: { type: "stop_reason", reason: "end_turn" } }], {
                finish: { status: "completed", stopReason: "end_turn", onCommitted: Effect.void }
              })),
              Stream.empty
            ))
            : store.readChunks(runId, after)
      }
      const chunks = yield* Stream.runCollect(followStored(racing, run.id, 0, 200, () => Effect.void))
      assert.deepStrictEqual(Array.from(chunks, (c) => [c.seq, c.type]), [[1, "request_begin"], [2, "request_end"], [3, "stop_reason"]])
    }).pipe(Effect.provide(layerMemory)))

  it.effect("after a read that found chunks it waits for the next notice instead of reading again at once", () =>
    Effect.gen(function*() {
      const { log, run, store } = yield* started
      let reads = 0
      const counting: Store["Type"] = { ...store, readChunks: (runId, after) => (reads++, store.readChunks(runId, after)) }
      // Each wait is the owner committing once more, then its notice arriving.
      const owner = [
        log.emit([{ event: { type: "request_end", status: "ok", attempt: 0 } }]),
        log.emit([{ event: { type: "stop_reason", reason: "end_turn" } }], { finish: { status: "completed", stopReason: "end_turn", onCommitted: Effect.void } })
      ]
      let waits = 0
      const chunks = yield* Stream.runCollect(followStored(counting, run.id, 0, 200, () => Effect.orDie(owner[waits++]!)))
      assert.deepStrictEqual(Array.from(chunks, (c) => c.type), ["request_begin", "request_end", "stop_reason"])
      assert.deepStrictEqual([reads, waits], [3, 2])
    }).pipe(Effect.provide(layerMemory)))
})
