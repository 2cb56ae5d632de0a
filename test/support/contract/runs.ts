import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { ConversationId, Otid, RunId, ToolCallId } from "../../../src/domain/Ids.js"
import type { ToolReturn } from "../../../src/domain/Messages.js"
import { Store } from "../../../src/services/Store.js"
import { append, call, chunk, ret, type MakeStore, newConversation, readAll, snapshot, summary, user } from "./fixtures.js"

export const runContract = (makeStore: MakeStore) =>
  describe("runs and chunks", () => {
    it.effect("createRun is idempotent per (conversation, otid)", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        const other = yield* newConversation
        yield* TestClock.adjust(7)
        const first = yield* store.createRun(c.id, Otid.make("otid-a"), "turn")
        assert.isTrue(first.created)
        assert.match(first.run.id, /^run-[0-9a-f-]{36}$/)
        assert.deepStrictEqual(
          [first.run.status, first.run.kind, first.run.lastSeq, first.run.stopReason, first.run.createdAt],
          ["running", "turn", 0, undefined, 7]
        )
        const again = yield* store.createRun(c.id, Otid.make("otid-a"), "compaction")
        assert.isFalse(again.created)
        assert.deepStrictEqual(again.run, first.run)
        const elsewhere = yield* store.createRun(other.id, Otid.make("otid-a"), "turn")
        assert.isTrue(elsewhere.created)
        assert.notStrictEqual(elsewhere.run.id, first.run.id)
        assert.deepStrictEqual(yield* store.runByOtid(c.id, Otid.make("otid-a")), Option.some(first.run))
        yield* store.commit({ conversationId: c.id, finishRun: { runId: first.run.id, status: "completed", stopReason: "end_turn" } })
        const concurrent = yield* Effect.all(
          Array.from({ length: 10 }, () => store.createRun(c.id, Otid.make("otid-b"), "turn")),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(concurrent.filter((r) => r.created).length, 1)
        assert.strictEqual(new Set(concurrent.map((r) => r.run.id)).size, 1)
        assert.isTrue(Option.isNone(yield* store.runByOtid(c.id, Otid.make("otid-z"))))
        assert.deepStrictEqual((yield* store.getRun(first.run.id)).status, "completed")
        const missing = yield* Effect.flip(store.createRun(ConversationId.make("conv-missing"), Otid.make("o"), "turn"))
        assert.strictEqual(missing._tag, "NotFound")
        const noRun = yield* Effect.flip(store.getRun(RunId.make("run-missing")))
        assert.deepStrictEqual([noRun._tag, noRun._tag === "NotFound" && noRun.entity], ["NotFound", "run"])
      }).pipe(Effect.provide(makeStore())))

    it.effect("a conversation runs one run at a time: another otid is a Conflict naming the running run", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        const first = (yield* store.createRun(c.id, Otid.make("one"), "turn", { owner: "host:1:2" })).run
        assert.strictEqual(first.owner, "host:1:2")
        const busy = yield* Effect.flip(store.createRun(c.id, Otid.make("two"), "compaction"))
        assert.deepStrictEqual([busy._tag, busy._tag === "Conflict" && busy.runId], ["Conflict", first.id])
        // the same otid still finds its run
        assert.isFalse((yield* store.createRun(c.id, Otid.make("one"), "turn")).created)
        yield* store.commit({ conversationId: c.id, finishRun: { runId: first.id, status: "failed", stopReason: "error" } })
        const second = yield* store.createRun(c.id, Otid.make("two"), "turn")
        assert.isTrue(second.created)
        assert.strictEqual(second.run.owner, undefined)
      }).pipe(Effect.provide(makeStore())))

    it.effect("createRun records its input with the run, in one transaction: nothing for a repeated otid, a busy conversation or an answered call", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        yield* append(c.id, user("go"), call("t1"))
        const input = (text: string, answers: ReadonlyArray<string> = []) => (run: { readonly id: RunId }) => ({
          items: [
            ...answers.map((id) => ({ item: { ...(ret(id) as ToolReturn), run_id: run.id } })),
            { item: { ...user(text), run_id: run.id } }
          ],
          expectOpen: answers.map((id) => ToolCallId.make(id))
        })
        const texts = Effect.map(store.listItems(c.id), (items) => items.flatMap((s) => (s.item.type === "user_message" ? [s.item.content] : [])))
        const first = yield* store.createRun(c.id, Otid.make("one"), "turn", { input: input("first", ["t1"]) })
        assert.isTrue(first.created)
        assert.deepStrictEqual(yield* texts, ["go", "first"])
        const stored = (yield* store.listItems(c.id)).at(-1)!
        assert.strictEqual(stored.item.type === "user_message" && stored.item.run_id, first.run.id)
        assert.deepStrictEqual(yield* store.pendingApprovals(c.id), [])
        // the same otid: its run, and no second input
        const again = yield* store.createRun(c.id, Otid.make("one"), "turn", { input: input("again") })
        assert.deepStrictEqual([again.created, again.run.id], [false, first.run.id])
        // busy: Conflict, nothing recorded
        const busy = yield* Effect.flip(store.createRun(c.id, Otid.make("two"), "turn", { input: input("busy") }))
        assert.strictEqual(busy._tag, "Conflict")
        assert.deepStrictEqual(yield* texts, ["go", "first"])
        yield* store.commit({ conversationId: c.id, finishRun: { runId: first.run.id, status: "completed", stopReason: "end_turn" } })
        // a call answered already: ToolCallAnswered, and no run
        const answered = yield* Effect.flip(store.createRun(c.id, Otid.make("three"), "turn", { input: input("late", ["t1"]) }))
        assert.strictEqual(answered._tag, "ToolCallAnswered")
        assert.isTrue(Option.isNone(yield* store.runByOtid(c.id, Otid.make("three"))))
        assert.isTrue(Option.isNone(yield* store.activeRun(c.id)))
        assert.deepStrictEqual(yield* texts, ["go", "first"])
      }).pipe(Effect.provide(makeStore())))

    it.effect("claimRun records a running run's new owner; a finished run keeps its own", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        const { run } = yield* store.createRun(c.id, Otid.make("one"), "turn", { owner: "10.0.0.1:34431" })
        yield* store.claimRun(run.id, "10.0.0.2:34431")
        assert.strictEqual((yield* store.getRun(run.id)).owner, "10.0.0.2:34431")
        yield* store.commit({ conversationId: c.id, finishRun: { runId: run.id, status: "completed", stopReason: "end_turn" } })
        yield* store.claimRun(run.id, "10.0.0.3:34431")
        assert.strictEqual((yield* store.getRun(run.id)).owner, "10.0.0.2:34431")
      }).pipe(Effect.provide(makeStore())))

    it.effect("activeRun and runningRuns follow finishRun", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const a = yield* newConversation
        const b = yield* newConversation
        assert.isTrue(Option.isNone(yield* store.activeRun(a.id)))
        const ra = (yield* store.createRun(a.id, Otid.make("o1"), "turn")).run
        const rb = (yield* store.createRun(b.id, Otid.make("o1"), "compaction")).run
        assert.deepStrictEqual(Option.map(yield* store.activeRun(a.id), (r) => r.id), Option.some(ra.id))
        assert.deepStrictEqual((yield* store.runningRuns).map((r) => r.id).sort(), [ra.id, rb.id].sort())
        yield* TestClock.adjust(30)
        yield* store.commit({
          conversationId: a.id,
          chunks: [{ type: "stop_reason", reason: "end_turn", run_id: ra.id, seq: 1 }],
          finishRun: { runId: ra.id, status: "completed", stopReason: "end_turn" }
        })
        const finished = yield* store.getRun(ra.id)
        assert.deepStrictEqual(
          [finished.status, finished.stopReason, finished.lastSeq, finished.updatedAt],
          ["completed", "end_turn", 1, 30]
        )
        assert.isTrue(Option.isNone(yield* store.activeRun(a.id)))
        assert.deepStrictEqual((yield* store.runningRuns).map((r) => r.id), [rb.id])
        // The otid still names the finished run.
        assert.deepStrictEqual(yield* store.createRun(a.id, Otid.make("o1"), "turn"), { run: finished, created: false })
      }).pipe(Effect.provide(makeStore())))

    it.effect("chunks continue the run's seq; readChunks reads after a seq to the last committed one", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        const other = (yield* store.createRun(c.id, Otid.make("o2"), "turn")).run
        yield* store.commit({
          conversationId: c.id,
          chunks: [chunk(other.id, 1)],
          finishRun: { runId: other.id, status: "completed", stopReason: "end_turn" }
        })
        const run = (yield* store.createRun(c.id, Otid.make("o"), "turn")).run
        yield* store.commit({ conversationId: c.id, chunks: [chunk(run.id, 1), chunk(run.id, 2)] })
        yield* store.commit({ conversationId: c.id, chunks: [chunk(run.id, 3)] })
        assert.strictEqual((yield* store.getRun(run.id)).lastSeq, 3)
        assert.strictEqual((yield* store.getRun(other.id)).lastSeq, 1)
        assert.deepStrictEqual(yield* readAll(run.id), [chunk(run.id, 1), chunk(run.id, 2), chunk(run.id, 3)])
        assert.deepStrictEqual(yield* readAll(run.id, 2), [chunk(run.id, 3)])
        assert.deepStrictEqual(yield* readAll(run.id, 3), [])
        assert.deepStrictEqual(yield* readAll(other.id), [chunk(other.id, 1)])
        const missing = yield* Effect.flip(readAll(RunId.make("run-missing")))
        assert.strictEqual(missing._tag, "NotFound")
      }).pipe(Effect.provide(makeStore())))

    it.effect("readChunks pages through long runs in order", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        const run = (yield* store.createRun(c.id, Otid.make("o"), "turn")).run
        for (let batch = 0; batch < 7; batch++) {
          yield* store.commit({
            conversationId: c.id,
            chunks: Array.from({ length: 100 }, (_, i) => chunk(run.id, batch * 100 + i + 1))
          })
        }
        const all = yield* readAll(run.id)
        assert.deepStrictEqual(all.map((x) => x.seq), Array.from({ length: 700 }, (_, i) => i + 1))
        assert.deepStrictEqual((yield* readAll(run.id, 255)).map((x) => x.seq)[0], 256)
        assert.strictEqual((yield* readAll(run.id, 256)).length, 444)
        assert.strictEqual((yield* readAll(run.id, 512)).length, 188)
      }).pipe(Effect.provide(makeStore())))

    it.effect("a write to two runs whose second has a gap names the second, and leaves the first where it stood", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        const done = (yield* store.createRun(c.id, Otid.make("a"), "turn")).run
        yield* store.commit({ conversationId: c.id, finishRun: { runId: done.id, status: "completed", stopReason: "end_turn" } })
        const run = (yield* store.createRun(c.id, Otid.make("b"), "turn")).run
        const e = yield* Effect.flip(store.commit({ conversationId: c.id, chunks: [chunk(done.id, 1), chunk(run.id, 5)] }))
        const seen: ReadonlyArray<string | number> = e._tag === "ChunkSeqError" ? [e._tag, e.runId, e.expected, e.got] : [e._tag]
        assert.deepStrictEqual(seen, ["ChunkSeqError", run.id, 1, 5])
        assert.strictEqual((yield* store.getRun(done.id)).lastSeq, 0)
        assert.strictEqual((yield* store.getRun(done.id)).status, "completed")
        assert.deepStrictEqual(yield* readAll(done.id), [])
      }).pipe(Effect.provide(makeStore())))

    it.effect("a seq gap, a repeat or an unknown run fails the whole write and keeps nothing of it", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        const other = yield* newConversation
        const run = (yield* store.createRun(c.id, Otid.make("o"), "turn")).run
        const foreign = (yield* store.createRun(other.id, Otid.make("o"), "turn")).run
        yield* append(c.id, user("u1"), call("t1"))
        yield* store.commit({ conversationId: c.id, chunks: [chunk(run.id, 1), chunk(run.id, 2)] })
        yield* TestClock.adjust(100)
        const before = yield* snapshot(c.id)
        const items = [{ item: user("lost") }, { item: call("t2") }]
        const attempts = [
          { chunks: [chunk(run.id, 4)], expect: ["ChunkSeqError", 3, 4] },
          { chunks: [chunk(run.id, 2)], expect: ["ChunkSeqError", 3, 2] },
          { chunks: [chunk(run.id, 3), chunk(run.id, 5)], expect: ["ChunkSeqError", 4, 5] },
          { chunks: [chunk(run.id, 3), chunk(foreign.id, 1)], expect: ["NotFound"] },
          { chunks: [chunk(RunId.make("run-missing"), 1)], expect: ["NotFound"] }
        ] as const
        for (const attempt of attempts) {
          const e = yield* Effect.flip(store.commit({
            conversationId: c.id,
            items,
            chunks: attempt.chunks,
            newSegment: true,
            finishRun: { runId: run.id, status: "completed", stopReason: "end_turn" }
          }))
          const seen: ReadonlyArray<string | number> = e._tag === "ChunkSeqError" ? [e._tag, e.expected, e.got] : [e._tag]
          assert.deepStrictEqual(seen, [...attempt.expect])
          assert.deepStrictEqual(yield* snapshot(c.id), before)
          assert.deepStrictEqual((yield* readAll(run.id)).map((x) => x.seq), [1, 2])
          assert.strictEqual((yield* store.getRun(run.id)).lastSeq, 2)
          assert.strictEqual(yield* store.exportSegment(c.id, 2), "")
        }
        assert.strictEqual((yield* store.getRun(foreign.id)).lastSeq, 0)
        const unknownFinish = yield* Effect.flip(store.commit({
          conversationId: c.id,
          items,
          finishRun: { runId: foreign.id, status: "failed", stopReason: "error" }
        }))
        assert.strictEqual(unknownFinish._tag, "NotFound")
        assert.deepStrictEqual(yield* snapshot(c.id), before)
        const noConversation = yield* Effect.flip(store.commit({ conversationId: ConversationId.make("conv-x"), items }))
        assert.strictEqual(noConversation._tag, "NotFound")

        // The log continues exactly where it stood: no hole left by the failed writes.
        const next = yield* store.commit({ conversationId: c.id, items: [{ item: summary("ok") }], chunks: [chunk(run.id, 3)] })
        assert.deepStrictEqual(next.map((i) => i.position), [3])
        assert.strictEqual((yield* store.getRun(run.id)).lastSeq, 3)
      }).pipe(Effect.provide(makeStore())))
  })
