import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import { Chunk as EChunk, Effect, Option, Stream } from "effect"
import * as Path from "node:path"
import type { Chunk } from "../../src/domain/Events.js"
import { Otid, RunId } from "../../src/domain/Ids.js"
import { LIVE_CAPACITY, makeRunLog } from "../../src/programs/backend/RunLog.js"
import { END_EVENT, sseEvent } from "../../src/programs/server/Sse.js"
import { chunksOf } from "../../src/services/backend/RemoteRunStream.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import { Store } from "../../src/services/Store.js"
import { counted } from "../support/effectSteps.js"
import { tempDir } from "../support/tempDir.js"

/**
 * The hot path's work is per batch (what one network read brought), never per chunk: a batch of a
 * hundred deltas costs the run log's commit, publish and follower as many Effect steps as a batch of
 * one. Counted, not timed: every step the runtime takes on the counted fibers (the emitting one and
 * the follower's) goes through a supervisor.
 */

/** One run: a follower caught up on its first chunk, then one batch of `deltas`, then the stop; the steps of the last two. */
const stepsFor = (deltas: number) =>
  Effect.gen(function*() {
    const store = yield* Store
    const conversation = yield* store.createConversation({})
    const { run } = yield* store.createRun(conversation.id, Otid.make(`o-${deltas}`), "turn")
    const log = yield* makeRunLog(store, { conversationId: conversation.id, runId: run.id, lastSeq: 0 })
    yield* log.emit([{ event: { type: "request_begin", attempt: 0 }, record: "item" }])
    // Its first pull has subscribed it: the batch below reaches it live.
    const pull = yield* Stream.toPull(log.follow(0))
    assert.strictEqual(EChunk.size(yield* pull), 1)
    const { result, steps } = yield* counted(Effect.gen(function*() {
      yield* log.emit(Array.from({ length: deltas }, (_, i) => ({ event: { type: "text_delta", content: `${i} ` } as const })))
      yield* log.emit([{ event: { type: "stop_reason", reason: "end_turn" }, record: "item" }], {
        finish: { status: "completed", stopReason: "end_turn", onCommitted: Effect.void }
      })
      const read: Array<Chunk> = []
      for (;;) {
        const next = yield* Effect.option(pull)
        if (Option.isNone(next)) return read
        read.push(...EChunk.toReadonlyArray(next.value))
      }
    }))
    assert.strictEqual(result.length, deltas + 1)
    assert.strictEqual(result.at(-1)?.type, "stop_reason")
    return steps
  }).pipe(Effect.scoped)

const compare = (many: number) =>
  Effect.gen(function*() {
    const one = yield* stepsFor(1)
    const batch = yield* stepsFor(many)
    return { one, batch }
  })

describe("per-chunk work", () => {
  it.scoped("a batch of a hundred deltas takes the run log and its follower no more Effect steps than a batch of one", () =>
    Effect.gen(function*() {
      const many = 100
      assert.isBelow(many, LIVE_CAPACITY, "the batch fits the live buffer: it reaches the follower live")
      const dir = yield* tempDir
      const { batch, one } = yield* compare(many).pipe(Effect.provide(layerSqlite({ filename: Path.join(dir, "baton.db") })))
      // Equal in practice; the margin is far below one step a delta.
      assert.isBelow(batch - one, many / 4, `one delta: ${one} steps, ${many} deltas: ${batch} steps`)
    }))

  it.effect("a remote run stream's idle bound starts no fiber per read: a hundred reads start as many fibers as one", () =>
    Effect.gen(function*() {
      const runId = RunId.make("run-1")
      const body = (reads: number) => {
        const bytes = new TextEncoder()
        const stream = new ReadableStream<Uint8Array>({
          start: (controller) => {
            // One enqueue is one read of the body.
            for (let seq = 1; seq <= reads; seq++) controller.enqueue(bytes.encode(sseEvent({ type: "text_delta", content: `${seq} `, run_id: runId, seq })))
            controller.enqueue(bytes.encode(END_EVENT))
            controller.close()
          }
        })
        return HttpClientResponse.fromWeb(HttpClientRequest.get("http://baton.test/"), new Response(stream, { headers: { "content-type": "text/event-stream" } }))
      }
      const fibersFor = (reads: number) =>
        Effect.map(counted(Stream.runCollect(chunksOf(body(reads), 45_000))), ({ fibers, result }) => {
          assert.strictEqual(EChunk.size(result), reads)
          return fibers
        })
      const one = yield* fibersFor(1)
      const hundred = yield* fibersFor(100)
      assert.strictEqual(hundred, one, `one read: ${one} fibers, 100 reads: ${hundred} fibers`)
    }))
})
