import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ToolCallId } from "../../../src/domain/Ids.js"
import { Store } from "../../../src/services/Store.js"
import { append, call, contents, type MakeStore, newConversation, ret, summary, user } from "./fixtures.js"

const id = (s: string) => ToolCallId.make(s)

export const answersContract = (makeStore: MakeStore) =>
  describe("answers: results committed as tools finish", () => {
    it.effect("toolReturns: every return with these call ids, any flags, across segments, in order", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        yield* append(c.id, user("u"), call("t1"), call("t2"))
        yield* store.commit({ conversationId: c.id, items: [{ item: ret("t2"), traceOnly: true }] })
        yield* store.commit({ conversationId: c.id, newSegment: true, items: [{ item: summary("s") }] })
        yield* append(c.id, ret("t1"), call("t3"))
        const found = yield* store.toolReturns(c.id, [id("t1"), id("t2"), id("nope")])
        assert.deepStrictEqual(contents(found), ["tool_return:t2", "tool_return:t1"])
        assert.deepStrictEqual(found.map((s) => [s.segment, s.inContext, s.inTrace]), [[1, false, true], [2, true, true]])
        assert.deepStrictEqual(yield* store.toolReturns(c.id, []), [])
        assert.strictEqual((yield* Effect.flip(store.toolReturns("conv-nope" as typeof c.id, [id("t1")])))._tag, "NotFound")
      }).pipe(Effect.provide(makeStore())))

    it.effect("expectOpen: a write answering a call that is no longer open fails with ToolCallAnswered and writes nothing", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        yield* append(c.id, user("u"), call("t1"), call("t2"))
        yield* store.commit({ conversationId: c.id, items: [{ item: ret("t1") }], expectOpen: [id("t1")] })
        const before = yield* store.listItems(c.id)
        const late = yield* Effect.flip(store.commit({ conversationId: c.id, items: [{ item: ret("t1") }, { item: ret("t2") }], expectOpen: [id("t1"), id("t2")] }))
        assert.strictEqual(late._tag, "ToolCallAnswered")
        assert.strictEqual(late._tag === "ToolCallAnswered" && String(late.toolCallId), "t1")
        assert.deepStrictEqual(yield* store.listItems(c.id), before)
        assert.deepStrictEqual((yield* store.pendingApprovals(c.id)).map((x) => String(x.tool_call_id)), ["t2"])
        yield* store.commit({ conversationId: c.id, items: [{ item: ret("t2") }], expectOpen: [id("t2")] })
        assert.deepStrictEqual(yield* store.pendingApprovals(c.id), [])
      }).pipe(Effect.provide(makeStore())))

    it.effect("expectOpen: two writers answering one call at once, exactly one wins", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        yield* append(c.id, user("u"), call("t1"))
        const write = store.commit({ conversationId: c.id, items: [{ item: ret("t1") }], expectOpen: [id("t1")] })
        const outcomes = yield* Effect.all([Effect.either(write), Effect.either(write)], { concurrency: "unbounded" })
        assert.deepStrictEqual(outcomes.map((o) => o._tag).sort(), ["Left", "Right"])
        assert.strictEqual((yield* store.toolReturns(c.id, [id("t1")])).length, 1)
      }).pipe(Effect.provide(makeStore())))
  })
