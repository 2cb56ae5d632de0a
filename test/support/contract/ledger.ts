import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ConversationId, Otid, ToolCallId } from "../../../src/domain/Ids.js"
import type { UserMessage } from "../../../src/domain/Messages.js"
import type { UsageRecord } from "../../../src/domain/Usage.js"
import { Store } from "../../../src/services/Store.js"
import { type MakeStore, newConversation } from "./fixtures.js"

const steer = (text: string): UserMessage => ({ type: "user_message", content: text, otid: Otid.make(`steer-${text}`) })

const usage = (conversation: ConversationId, at: number, purpose: UsageRecord["purpose"], input: number): UsageRecord => ({
  conversation_id: conversation,
  purpose,
  model: "m",
  input_tokens: input,
  output_tokens: 2,
  cache_read_tokens: 1,
  cache_write_tokens: 0,
  created_at: at,
  ...(purpose === "turn" ? { run_id: "run-1" } : {})
})

export const ledgerContract = (makeStore: MakeStore) =>
  describe("side tables: steering and usage", () => {
    it.effect("steering is held in order, taken once, per conversation; an unknown conversation is NotFound", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const a = yield* newConversation
        const b = yield* newConversation
        yield* store.queueSteering(a.id, steer("one"))
        yield* store.queueSteering(b.id, steer("other"))
        yield* store.queueSteering(a.id, steer("two"))
        assert.deepStrictEqual(yield* store.takeSteering(a.id), [steer("one"), steer("two")])
        assert.deepStrictEqual(yield* store.takeSteering(a.id), [])
        assert.deepStrictEqual(yield* store.takeSteering(b.id), [steer("other")])
        const missing = "conv-nope" as ConversationId
        assert.strictEqual((yield* Effect.flip(store.queueSteering(missing, steer("x"))))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(store.takeSteering(missing)))._tag, "NotFound")
      }).pipe(Effect.provide(makeStore())))

    it.effect("held steering is read without being taken; the commit that records it takes it, and only it, in the same transaction", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const a = yield* newConversation
        yield* store.queueSteering(a.id, steer("one"))
        yield* store.queueSteering(a.id, steer("two"))
        assert.deepStrictEqual(yield* store.heldSteering(a.id), [steer("one"), steer("two")])
        assert.deepStrictEqual(yield* store.heldSteering(a.id), [steer("one"), steer("two")], "a read takes nothing")
        // A commit that fails takes nothing either: the steering is still there for the next try.
        const failed = yield* Effect.flip(store.commit({
          conversationId: a.id,
          items: [{ item: steer("one") }],
          expectOpen: [ToolCallId.make("call-never-made")],
          takesSteering: [steer("one").otid]
        }))
        assert.strictEqual(failed._tag, "ToolCallAnswered")
        assert.deepStrictEqual(yield* store.heldSteering(a.id), [steer("one"), steer("two")])
        yield* store.commit({ conversationId: a.id, items: [{ item: steer("one") }], takesSteering: [steer("one").otid] })
        assert.deepStrictEqual(yield* store.heldSteering(a.id), [steer("two")])
        assert.deepStrictEqual((yield* store.listItems(a.id)).map((s) => s.item), [steer("one")])
        assert.strictEqual((yield* Effect.flip(store.heldSteering("conv-nope" as ConversationId)))._tag, "NotFound")
      }).pipe(Effect.provide(makeStore())))

    it.effect("usage records come back as written, oldest first, filtered by conversation and time", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const a = yield* newConversation
        const b = yield* newConversation
        const records = [usage(a.id, 1_000, "turn", 10), usage(b.id, 2_000, "title", 20), usage(a.id, 3_000, "compaction", 30)]
        yield* Effect.forEach(records, store.recordUsage, { discard: true })
        assert.deepStrictEqual(yield* store.usage(), records)
        assert.deepStrictEqual(yield* store.usage({ conversationId: a.id }), [records[0]!, records[2]!])
        assert.deepStrictEqual(yield* store.usage({ since: 2_000 }), [records[1]!, records[2]!])
      }).pipe(Effect.provide(makeStore())))

    it.effect("a commit's usage is recorded with it, and not at all when the commit fails", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const a = yield* newConversation
        const kept = [usage(a.id, 1_000, "turn", 10), usage(a.id, 1_000, "compaction", 30)]
        const failed = yield* Effect.flip(store.commit({
          conversationId: a.id,
          items: [{ item: steer("one") }],
          expectOpen: [ToolCallId.make("call-none")],
          usage: [usage(a.id, 500, "turn", 5)]
        }))
        assert.strictEqual(failed._tag, "ToolCallAnswered")
        assert.deepStrictEqual(yield* store.usage(), [])
        yield* store.commit({ conversationId: a.id, items: [{ item: steer("one") }], usage: kept })
        assert.deepStrictEqual(yield* store.usage(), kept)
        assert.deepStrictEqual((yield* store.listItems(a.id)).map((s) => s.item), [steer("one")])
      }).pipe(Effect.provide(makeStore())))
  })
