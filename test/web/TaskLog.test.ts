import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Option, Stream } from "effect"
import * as TaskLog from "../../src/programs/web/TaskLog.js"

const entries = (n: number) => Array.from({ length: n }, (_, i) => ({ kind: "event" as const, data: `e${i}` }))

describe("TaskLog: what a page replays and follows", () => {
  it.effect("a follower gets what came after its id, then the live entries, each once and in order", () =>
    Effect.gen(function*() {
      const log = yield* TaskLog.make()
      yield* log.append(entries(3))
      const fiber = yield* log.follow(1).pipe(Stream.take(4), Stream.runCollect, Effect.fork)
      yield* log.append([{ kind: "state", data: "s" }])
      yield* log.append([{ kind: "event", data: "late" }])
      const got = Chunk.toArray(yield* Fiber.join(fiber))
      assert.deepStrictEqual(got.map((f) => (f._tag === "Entry" ? `${f.entry.id}:${f.entry.data}` : "reset")), ["2:e1", "3:e2", "4:s", "5:late"])
    }))

  it.effect("after a trim, a follower that asks for what is gone, or for an id this log never gave, gets a reset", () =>
    Effect.gen(function*() {
      const log = yield* TaskLog.make()
      yield* log.append(entries(3))
      assert.strictEqual(yield* log.trim, 3)
      yield* log.append(entries(2))
      const gone = yield* log.follow(1).pipe(Stream.take(1), Stream.runCollect)
      assert.deepStrictEqual(Chunk.toArray(gone), [{ _tag: "Reset" }])
      const foreign = yield* log.follow(99).pipe(Stream.take(1), Stream.runCollect)
      assert.deepStrictEqual(Chunk.toArray(foreign), [{ _tag: "Reset" }])
      const kept = yield* log.follow(3).pipe(Stream.take(2), Stream.runCollect)
      assert.deepStrictEqual(Chunk.toArray(kept).map((f) => (f._tag === "Entry" ? f.entry.id : 0)), [4, 5])
    }))

  it("Last-Event-ID resumes only this process's ids", () => {
    assert.deepStrictEqual(TaskLog.resumeAfter("ab12", "ab12:7"), Option.some(7))
    assert.deepStrictEqual(TaskLog.resumeAfter("ab12", "cd34:7"), Option.none())
    assert.deepStrictEqual(TaskLog.resumeAfter("ab12", "run-1:7"), Option.none())
    assert.deepStrictEqual(TaskLog.resumeAfter("ab12", undefined), Option.none())
  })
})
