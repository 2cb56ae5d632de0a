import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Queue, RuntimeFlags, RuntimeFlagsPatch, type Scope, Stream, Supervisor } from "effect"
import * as Path from "node:path"
import { Otid } from "../../src/domain/Ids.js"
import { makeRunLog, type RunLog } from "../../src/programs/backend/RunLog.js"
import { sseResponse } from "../../src/programs/server/Sse.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import { Store } from "../../src/services/Store.js"
import { tempDir } from "../support/tempDir.js"

/**
 * A follower that waits on a live run takes each batch the run publishes whole, in one pull, and
 * what it costs per batch is counted (Effect steps of the follower's fibers, not the run's), not
 * timed: the run log's follow alone, and followed into an SSE body as `baton serve` sends it.
 */

class StepCounter extends Supervisor.AbstractSupervisor<number> {
  steps = 0
  readonly value = Effect.sync(() => this.steps)
  override onEffect() {
    this.steps++
  }
}

const DELTAS = 10

/** What the follower's side does with the run's log; told after each piece it got, so the run writes its next batch only then. */
type Consume = (log: RunLog, got: (piece: number) => Effect.Effect<void>) => Effect.Effect<void, unknown, Scope.Scope>

/** A run of `batches` batches of ten deltas, each published while the follower waits: the pieces it got and its steps. */
const follow = (batches: number, consume: Consume) =>
  Effect.gen(function*() {
    const store = yield* Store
    const conversation = yield* store.createConversation({})
    const { run } = yield* store.createRun(conversation.id, Otid.make(`o-${batches}`), "turn")
    const log = yield* makeRunLog(store, { conversationId: conversation.id, runId: run.id, lastSeq: 0 })
    const seen = yield* Queue.unbounded<void>()
    // The run's own fiber is not counted: it is forked before the supervisor is in place.
    const runFiber = yield* Effect.fork(Effect.gen(function*() {
      yield* Queue.take(seen)
      for (let b = 0; b < batches; b++) {
        yield* log.emit(Array.from({ length: DELTAS }, (_, i) => ({ event: { type: "text_delta", content: `${b}.${i} ` } as const })))
        yield* Queue.take(seen)
      }
      yield* log.emit([{ event: { type: "stop_reason", reason: "end_turn" }, record: "item" }], {
        finish: { status: "completed", stopReason: "end_turn", onCommitted: Effect.void }
      })
    }))
    yield* log.emit([{ event: { type: "request_begin", attempt: 0 }, record: "item" }])
    const pieces: Array<number> = []
    const counter = new StepCounter()
    yield* consume(log, (piece) => Effect.zipRight(Effect.sync(() => pieces.push(piece)), Queue.offer(seen, undefined))).pipe(
      Effect.supervised(counter),
      Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
    )
    yield* Fiber.join(runFiber)
    return { pieces, steps: counter.steps }
  }).pipe(Effect.scoped)

/** Steps per batch: the difference between a run of 30 batches and one of 10, over 20. */
const stepsPerBatch = (consume: Consume) =>
  Effect.gen(function*() {
    const few = yield* follow(10, consume)
    const many = yield* follow(30, consume)
    return (many.steps - few.steps) / 20
  })

const chunksOnly: Consume = (log, got) => Stream.runForEachChunk(log.follow(0), (batch) => got(batch.length))

const sseBody: Consume = (log, got) =>
  Effect.gen(function*() {
    const response = yield* sseResponse(log.follow(0), { heartbeatMs: 3_600_000, closing: Effect.never })
    // The body is a Node stream the server pipes to the socket; each write to it is one piece.
    const body = response.body as Extract<HttpServerResponse.HttpServerResponse["body"], { readonly _tag: "Raw" }>
    const pieces = Stream.fromAsyncIterable(body.body as AsyncIterable<Uint8Array>, (error) => error)
    const decoder = new TextDecoder()
    yield* Stream.runForEach(pieces, (bytes) => got(decoder.decode(bytes).match(/^data:/gm)?.length ?? 0))
  })

const sqlite = <A, E>(effect: Effect.Effect<A, E, Store>) =>
  Effect.flatMap(tempDir, (dir) => Effect.provide(effect, layerSqlite({ filename: Path.join(dir, "baton.db") })))

describe("a follower of a live run", () => {
  it.scoped("takes each batch the run publishes whole: one pull, one SSE write", () =>
    Effect.gen(function*() {
      const chunks = yield* sqlite(follow(5, chunksOnly))
      // The first chunk, five batches of ten deltas, the stop_reason. Taken with `Queue.takeBetween`
      // (Stream.fromQueue) each batch came in two pieces, 1 and 9, and so went out in two writes.
      assert.deepStrictEqual(chunks.pieces, [1, DELTAS, DELTAS, DELTAS, DELTAS, DELTAS, 1])
      const sse = yield* sqlite(follow(5, sseBody))
      // Then the stop_reason and the stream's `end` event, in one write or two.
      assert.deepStrictEqual(sse.pieces.slice(0, 6), [1, DELTAS, DELTAS, DELTAS, DELTAS, DELTAS])
    }))

  it.scoped("costs few Effect steps per batch, in the run log's follow and in the SSE writer", () =>
    Effect.gen(function*() {
      // 96 and 132 with the live follow as a chain of stream stages over Stream.fromQueue (each batch
      // in two pieces); 49 and 84 as one pull loop. The margin is for where the scheduler yields.
      const follower = yield* sqlite(stepsPerBatch(chunksOnly))
      assert.isAtMost(follower, 60, `${follower} steps a batch`)
      const sse = yield* sqlite(stepsPerBatch(sseBody))
      assert.isAtMost(sse, 100, `${sse} steps a batch`)
    }))
})

describe("a run log closed before its run's end (its job stopped: a cluster's shard moved)", () => {
  it.scoped("ends its followers with what was published, waiting or joining later; nothing more is read", () =>
    sqlite(Effect.gen(function*() {
      const store = yield* Store
      const conversation = yield* store.createConversation({})
      const { run } = yield* store.createRun(conversation.id, Otid.make("o-close"), "turn")
      const log = yield* makeRunLog(store, { conversationId: conversation.id, runId: run.id, lastSeq: 0 })
      yield* log.emit([{ event: { type: "request_begin", attempt: 0 }, record: "item" }])
      const waiting = yield* Effect.fork(Stream.runCollect(log.follow(0)))
      yield* log.emit([{ event: { type: "text_delta", content: "a" } }, { event: { type: "text_delta", content: "b" } }])
      yield* log.close
      const seqs = (chunks: Iterable<{ readonly seq: number }>) => Array.from(chunks, (c) => c.seq)
      // Without the close the waiting follower never ends: Fiber.join would hang the test.
      assert.deepStrictEqual(seqs(yield* Fiber.join(waiting)), [1, 2, 3])
      assert.deepStrictEqual(seqs(yield* Stream.runCollect(log.follow(1))), [2, 3])
      assert.deepStrictEqual(seqs(yield* Stream.runCollect(log.follow(3))), [])
    })))
})
