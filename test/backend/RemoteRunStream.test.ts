import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, Stream, TestClock } from "effect"
import { Conflict } from "../../src/domain/Errors.js"
import type { Chunk } from "../../src/domain/Events.js"
import { ConversationId, RunId } from "../../src/domain/Ids.js"
import { turnBudgets } from "../../src/domain/Recovery.js"
import { type Cursor, Dropped, resumable } from "../../src/services/backend/RemoteRunStream.js"
import { awaitSleeps } from "../support/testing.js"

const run = RunId.make("run-1")
const delta = (seq: number): Chunk => ({ type: "text_delta", content: `t${seq}`, run_id: run, seq })
const stop = (seq: number): Chunk => ({ type: "stop_reason", reason: "end_turn", run_id: run, seq })
const drop = Stream.fail(new Dropped({ message: "connection reset" }))

/** Scripted connections: the i-th open returns connections[i]; every cursor is recorded. */
const scripted = (connections: ReadonlyArray<Stream.Stream<Chunk, Conflict | Dropped>>) => {
  const cursors: Array<Cursor> = []
  const open = (cursor: Cursor) => {
    cursors.push(cursor)
    return connections[cursors.length - 1] ?? Stream.dieMessage("no more connections scripted")
  }
  return { cursors, open }
}

const seqs = (chunks: Iterable<Chunk>) => Array.from(chunks, (c) => c.seq)

describe("RemoteRunStream.resumable", () => {
  it.effect("resumes after the last seq it emitted, 250 ms after the drop, and drops replayed seqs", () =>
    Effect.gen(function*() {
      const { cursors, open } = scripted([
        Stream.concat(Stream.make(delta(1), delta(2)), drop),
        Stream.make(delta(1), delta(2), delta(3), stop(4))
      ])
      const fiber = yield* Effect.fork(Stream.runCollect(resumable(open, { budgets: turnBudgets })))
      yield* awaitSleeps()
      yield* TestClock.adjust(249)
      assert.strictEqual(cursors.length, 1)
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(seqs(yield* Fiber.join(fiber)), [1, 2, 3, 4])
      assert.deepStrictEqual(cursors, [{ runId: undefined, after: 0 }, { runId: run, after: 2 }])
    }))

  it.effect("a connection that dies after a chunk is a drop; a stop_reason ends the stream", () =>
    Effect.gen(function*() {
      const { cursors, open } = scripted([Stream.concat(Stream.make(delta(1)), drop), Stream.make(stop(2), delta(3))])
      const fiber = yield* Effect.fork(Stream.runCollect(resumable(open, { budgets: turnBudgets, runId: run })))
      yield* awaitSleeps()
      yield* TestClock.adjust(250)
      assert.deepStrictEqual(seqs(yield* Fiber.join(fiber)), [1, 2])
      assert.strictEqual(cursors.length, 2)
    }))

  it.effect("a connection that ends cleanly (the server's end event) ends the stream, even without a stop_reason", () =>
    Effect.gen(function*() {
      const { cursors, open } = scripted([Stream.make(delta(1))])
      assert.deepStrictEqual(seqs(yield* Stream.runCollect(resumable(open, { budgets: turnBudgets, runId: run }))), [1])
      assert.strictEqual(cursors.length, 1)
    }))

  it.effect("consecutive drops wait 250, 500, 1000, 2000, 4000 ms, then StreamBroken; progress restarts the count", () =>
    Effect.gen(function*() {
      const { cursors, open } = scripted([
        Stream.concat(Stream.make(delta(1)), drop),
        drop,
        Stream.concat(Stream.make(delta(2)), drop),
        drop,
        drop,
        drop,
        drop,
        drop
      ])
      const fiber = yield* Effect.fork(Effect.either(Stream.runCollect(resumable(open, { budgets: turnBudgets }))))
      for (const [i, wait] of [250, 500, 250, 500, 1000, 2000, 4000].entries()) {
        yield* awaitSleeps()
        yield* TestClock.adjust(wait - 1)
        assert.strictEqual(cursors.length, i + 1)
        yield* TestClock.adjust(1)
      }
      const result = yield* Fiber.join(fiber)
      assert.isTrue(Either.isLeft(result) && result.left._tag === "StreamBroken" && result.left.runId === run)
      assert.strictEqual(cursors.length, 8)
      assert.deepStrictEqual(cursors.slice(2).map((c) => c.after), [1, 2, 2, 2, 2, 2])
    }))

  it.effect("a backend error is not a drop: it fails the stream at once", () =>
    Effect.gen(function*() {
      const conflict = new Conflict({ conversationId: ConversationId.make("c"), activity: "run", message: "busy" })
      const { cursors, open } = scripted([Stream.fail(conflict)])
      const result = yield* Effect.either(Stream.runCollect(resumable(open, { budgets: turnBudgets })))
      assert.deepStrictEqual(result, Either.left(conflict))
      assert.strictEqual(cursors.length, 1)
    }))
})
