import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Schema, TestClock } from "effect"
import { type TaskEvent, TaskEvent as TaskEventSchema, TaskEventFromJson } from "../../../src/domain/Events.js"
import { ConversationId, MessageId } from "../../../src/domain/Ids.js"
import { Store } from "../../../src/services/Store.js"
import {
  append,
  assistant,
  call,
  contents,
  decision,
  type MakeStore,
  newConversation,
  reasoning,
  requestBegin,
  ret,
  snapshot,
  summary,
  user
} from "./fixtures.js"

export const itemContract = (makeStore: MakeStore) =>
  describe("items", () => {
    it.effect("commit appends with contiguous positions, prefixed ids and clock stamps; reads agree", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        yield* TestClock.adjust(50)
        const first = yield* append(c.id, user("u1"), assistant("a1"))
        yield* TestClock.adjust(50)
        const second = yield* append(c.id, user("u2"))
        const empty = yield* store.commit({ conversationId: c.id })
        assert.deepStrictEqual(empty, [])
        assert.deepStrictEqual([...first, ...second].map((i) => i.position), [1, 2, 3])
        assert.deepStrictEqual([...first, ...second].map((i) => i.createdAt), [50, 50, 100])
        for (const i of [...first, ...second]) {
          assert.match(i.id, /^msg-[0-9a-f-]{36}$/)
          assert.strictEqual(i.conversationId, c.id)
          assert.strictEqual(i.segment, 1)
          assert.deepStrictEqual(yield* store.getItem(i.id), i)
        }
        assert.deepStrictEqual(yield* store.listItems(c.id), [...first, ...second])
        assert.deepStrictEqual(first[0]!.item, user("u1"))
        assert.strictEqual((yield* store.getConversation(c.id)).updated_at, 100)
      }).pipe(Effect.provide(makeStore())))

    it.effect("default flags: messages in context and trace, summary trace-only, events trace-only, contextOnly model-only", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        const cases: ReadonlyArray<readonly [TaskEvent, boolean | undefined, boolean, boolean]> = [
          [user("u"), undefined, true, true],
          [assistant("a"), undefined, true, true],
          [reasoning("r"), undefined, true, true],
          [call("t1"), undefined, true, true],
          [ret("t1"), undefined, true, true],
          [summary("s"), undefined, false, true],
          [user("[context_summary]s[/context_summary]"), true, true, false],
          [ret("t2"), true, true, false],
          [requestBegin, undefined, false, true],
          [decision("t1"), undefined, false, true],
          [{ type: "stop_reason", reason: "end_turn" }, undefined, false, true],
          [{ type: "abort" }, undefined, false, true]
        ]
        const stored = yield* store.commit({
          conversationId: c.id,
          items: cases.map(([item, contextOnly]) => (contextOnly === undefined ? { item } : { item, contextOnly }))
        })
        assert.deepStrictEqual(
          stored.map((s) => [s.item.type, s.inContext, s.inTrace]),
          cases.map(([item, , inContext, inTrace]) => [item.type, inContext, inTrace])
        )
      }).pipe(Effect.provide(makeStore())))

    it.effect("a delta as an item is a defect and nothing of that write is kept", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        yield* append(c.id, user("u1"))
        const before = yield* snapshot(c.id)
        const exit = yield* Effect.exit(store.commit({
          conversationId: c.id,
          items: [{ item: user("u2") }, { item: { type: "text_delta", content: "x" } }]
        }))
        assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause))
        assert.deepStrictEqual(yield* snapshot(c.id), before)
      }).pipe(Effect.provide(makeStore())))

    it.effect("listItems: before is older, after is newer, pages are chronological", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        yield* append(c.id, ...Array.from({ length: 10 }, (_, i) => user(`u${i + 1}`)))
        const positions = (q: Parameters<typeof store.listItems>[1]) =>
          Effect.map(store.listItems(c.id, q), (items) => items.map((i) => i.position))
        assert.deepStrictEqual(yield* positions(undefined), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        assert.deepStrictEqual(yield* positions({ limit: 3 }), [8, 9, 10])
        assert.deepStrictEqual(yield* positions({ before: 5, limit: 2 }), [3, 4])
        assert.deepStrictEqual(yield* positions({ before: 3 }), [1, 2])
        assert.deepStrictEqual(yield* positions({ after: 5, limit: 2 }), [6, 7])
        assert.deepStrictEqual(yield* positions({ after: 8 }), [9, 10])
        assert.deepStrictEqual(yield* positions({ after: 2, before: 6 }), [3, 4, 5])
        assert.deepStrictEqual(yield* positions({ after: 2, before: 9, limit: 2 }), [3, 4])
        assert.deepStrictEqual(yield* positions({ after: 10 }), [])
        assert.deepStrictEqual(yield* positions({ before: 1 }), [])
        // Walking older pages with `before` visits everything once.
        const walked: Array<number> = []
        let page = yield* positions({ limit: 4 })
        while (page.length > 0) {
          walked.unshift(...page)
          page = yield* positions({ limit: 4, before: page[0]! })
        }
        assert.deepStrictEqual(walked, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
      }).pipe(Effect.provide(makeStore())))

    it.effect("getItem of an unknown id is NotFound(message)", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const e = yield* Effect.flip(store.getItem(MessageId.make("msg-missing")))
        assert.strictEqual(e._tag, "NotFound")
        if (e._tag === "NotFound") assert.strictEqual(e.entity, "message")
      }).pipe(Effect.provide(makeStore())))

    it.effect("segments: a new segment holds the next model context; the trace keeps what happened", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        assert.strictEqual(yield* store.currentSegment(c.id), 1)
        yield* append(c.id, user("u1"), requestBegin, assistant("a1"))
        yield* store.commit({ conversationId: c.id, items: [{ item: user("[turn_aborted]x[/turn_aborted]"), contextOnly: true }] })
        assert.deepStrictEqual(contents(yield* store.modelContext(c.id)), ["u1", "a1", "[turn_aborted]x[/turn_aborted]"])

        const compacted = yield* store.commit({
          conversationId: c.id,
          newSegment: true,
          items: [
            { item: summary("the summary") },
            { item: user("[context_summary]the summary[/context_summary]"), contextOnly: true }
          ]
        })
        assert.deepStrictEqual(compacted.map((i) => i.segment), [2, 2])
        assert.strictEqual(yield* store.currentSegment(c.id), 2)
        yield* append(c.id, user("u2"))
        const context = yield* store.modelContext(c.id)
        assert.deepStrictEqual(contents(context), ["[context_summary]the summary[/context_summary]", "u2"])
        assert.isTrue(context.every((i) => i.segment === 2 && i.inContext))
        const all = yield* store.listItems(c.id)
        assert.deepStrictEqual(all.map((i) => i.position), [1, 2, 3, 4, 5, 6, 7])
        // segmentItems: everything of one segment, context-only and trace-only alike
        assert.deepStrictEqual((yield* store.segmentItems(c.id, 1)).map((i) => i.position), [1, 2, 3, 4])
        assert.deepStrictEqual((yield* store.segmentItems(c.id, 2)).map((i) => [i.position, i.inContext, i.inTrace]), [
          [5, false, true],
          [6, true, false],
          [7, true, true]
        ])
        assert.deepStrictEqual(yield* store.segmentItems(c.id, 3), [])
        // The current segment and its items in one read.
        const current = yield* store.currentSegmentItems(c.id)
        assert.strictEqual(current.segment, 2)
        assert.deepStrictEqual(current.items, yield* store.segmentItems(c.id, 2))
        const fresh = yield* newConversation
        assert.deepStrictEqual(yield* store.currentSegmentItems(fresh.id), { segment: 1, items: [] })
        const missing = yield* Effect.flip(store.currentSegmentItems(ConversationId.make("conv-missing")))
        assert.strictEqual(missing._tag, "NotFound")
      }).pipe(Effect.provide(makeStore())))

    it.effect("traceOnly items are shown in the trace and never reach the model", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        const [partial] = yield* store.commit({ conversationId: c.id, items: [{ item: assistant("half an answ"), traceOnly: true }] })
        assert.deepStrictEqual([partial!.inContext, partial!.inTrace], [false, true])
        assert.deepStrictEqual(yield* store.modelContext(c.id), [])
        assert.include(yield* store.exportSegment(c.id, 1), "half an answ")
      }).pipe(Effect.provide(makeStore())))

    it.effect("exportSegment: the stored JSON of each in-trace item, one per line, byte-stable", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        const seg1 = yield* append(c.id, user("u1 \u00e9\u{1F600} \"quoted\"\n"), requestBegin, call("t1"), ret("t1"))
        yield* store.commit({ conversationId: c.id, items: [{ item: user("carry"), contextOnly: true }] })
        const exported = yield* store.exportSegment(c.id, 1)
        const expected = seg1.map((i) => `${JSON.stringify(Schema.encodeSync(TaskEventSchema)(i.item))}\n`).join("")
        assert.strictEqual(exported, expected)
        const lines = exported.split("\n")
        assert.strictEqual(lines.pop(), "")
        assert.deepStrictEqual(lines.map((l) => Schema.decodeSync(TaskEventFromJson)(l)), seg1.map((i) => i.item))

        yield* store.commit({ conversationId: c.id, newSegment: true, items: [{ item: summary("s") }] })
        yield* append(c.id, user("u2"), assistant("a2"))
        assert.strictEqual(yield* store.exportSegment(c.id, 1), exported)
        assert.strictEqual(
          yield* store.exportSegment(c.id, 2),
          [summary("s"), user("u2"), assistant("a2")].map((i) => `${JSON.stringify(i)}\n`).join("")
        )
        assert.strictEqual(yield* store.exportSegment(c.id, 3), "")
        assert.strictEqual((yield* Effect.flip(store.exportSegment(ConversationId.make("conv-nope"), 1)))._tag, "NotFound")
      }).pipe(Effect.provide(makeStore())))

    it.effect("concurrent commits never interleave inside one write", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        const writes = yield* Effect.all(
          Array.from({ length: 20 }, (_, w) => append(c.id, user(`w${w}-a`), user(`w${w}-b`), user(`w${w}-c`))),
          { concurrency: "unbounded" }
        )
        for (const write of writes) {
          const p = write.map((i) => i.position)
          assert.deepStrictEqual(p, [p[0]!, p[0]! + 1, p[0]! + 2])
        }
        const all = yield* store.listItems(c.id, { limit: 1000 })
        assert.deepStrictEqual(all.map((i) => i.position), Array.from({ length: 60 }, (_, i) => i + 1))
        assert.deepStrictEqual(all.map((i) => i.id).sort(), writes.flat().map((i) => i.id).sort())
      }).pipe(Effect.provide(makeStore())))
  })
