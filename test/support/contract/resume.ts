import { assert, describe, it } from "@effect/vitest"
import { Effect, Random } from "effect"
import type { TaskEvent } from "../../../src/domain/Events.js"
import { pendingCalls } from "../../../src/domain/ItemLog.js"
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
  summary,
  user
} from "./fixtures.js"

const ids = (calls: ReadonlyArray<{ readonly tool_call_id: string }>) => calls.map((c) => c.tool_call_id)

export const resumeContract = (makeStore: MakeStore) =>
  describe("resume: pending approvals and backfill", () => {
    it.effect("pending approvals: unanswered calls of the current context, in call order", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        assert.deepStrictEqual(yield* store.pendingApprovals(c.id), [])
        yield* append(c.id, user("u"), call("t1"), call("t2"), call("t3"), decision("t2"))
        assert.deepStrictEqual(yield* store.pendingApprovals(c.id), [call("t1"), call("t2"), call("t3")])
        yield* append(c.id, ret("t2"))
        assert.deepStrictEqual(ids(yield* store.pendingApprovals(c.id)), ["t1", "t3"])
        // A carry-over result (context-only) answers a call just as well.
        yield* store.commit({ conversationId: c.id, items: [{ item: ret("t3"), contextOnly: true }] })
        assert.deepStrictEqual(ids(yield* store.pendingApprovals(c.id)), ["t1"])
        yield* append(c.id, ret("t1"), assistant("done"))
        assert.deepStrictEqual(yield* store.pendingApprovals(c.id), [])
      }).pipe(Effect.provide(makeStore())))

    it.effect("pending approvals: a return must come later; a new segment starts with none", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        yield* append(c.id, ret("early"), call("early"), call("t9"))
        assert.deepStrictEqual(ids(yield* store.pendingApprovals(c.id)), ["early", "t9"])
        yield* store.commit({ conversationId: c.id, newSegment: true, items: [{ item: summary("s") }] })
        assert.deepStrictEqual(yield* store.pendingApprovals(c.id), [])
        yield* append(c.id, call("t10"))
        assert.deepStrictEqual(ids(yield* store.pendingApprovals(c.id)), ["t10"])
      }).pipe(Effect.provide(makeStore())))

    it.effect("pending approvals always equal the reference rule over the model context (random histories)", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        let next = 0
        const open: Array<string> = []
        for (let step = 0; step < 120; step++) {
          const newSegment = (yield* Random.nextIntBetween(0, 25)) === 0
          if (newSegment) open.length = 0
          const items: Array<{ item: TaskEvent; contextOnly?: boolean }> = []
          const size = yield* Random.nextIntBetween(1, 5)
          for (let k = 0; k < size; k++) {
            const roll = yield* Random.nextIntBetween(0, 10)
            if (roll < 4) {
              const id = `t${next++}`
              open.push(id)
              items.push({ item: call(id) })
            } else if (roll < 7 && open.length > 0) {
              const at = yield* Random.nextIntBetween(0, open.length)
              const [id] = open.splice(at, 1)
              items.push({ item: ret(id!), ...(roll === 6 ? { contextOnly: true } : {}) })
            } else if (roll < 8) {
              items.push({ item: requestBegin })
            } else {
              items.push({ item: assistant(`a${step}`) })
            }
          }
          yield* store.commit({ conversationId: c.id, items, newSegment })
          const context = yield* store.modelContext(c.id)
          assert.deepStrictEqual(yield* store.pendingApprovals(c.id), pendingCalls(context))
          assert.deepStrictEqual(ids(yield* store.pendingApprovals(c.id)), open)
        }
      }).pipe(Effect.withRandom(Random.make("pending-seed")), Effect.provide(makeStore())))

    it.effect("backfill: Letta's case — u5…u12, the tool call and return, u13, a1", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        yield* append(c.id, ...Array.from({ length: 13 }, (_, i) => user(`u${i}`)))
        yield* append(c.id, requestBegin, call("t1"), decision("t1"), ret("t1"), user("u13"), assistant("a1"))
        const expected = ["u5", "u6", "u7", "u8", "u9", "u10", "u11", "u12", "tool_call:t1", "tool_return:t1", "u13", "a1"]
        assert.deepStrictEqual(contents(yield* store.backfill(c.id)), expected)
        assert.deepStrictEqual(contents(yield* store.backfill(c.id, { primary: 2 })), ["u13", "a1"])
        assert.deepStrictEqual(contents(yield* store.backfill(c.id, { primary: 3 })), ["u12", "tool_call:t1", "tool_return:t1", "u13", "a1"])
      }).pipe(Effect.provide(makeStore())))

    it.effect("backfill: the cap cuts, and a window never starts with a tool_return", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        yield* append(c.id, user("go"))
        for (let i = 0; i < 30; i++) yield* append(c.id, call(`t${i}`), ret(`t${i}`))
        yield* append(c.id, assistant("end"))
        const window = yield* store.backfill(c.id)
        assert.strictEqual(window.length, 39)
        assert.deepStrictEqual(contents(window).slice(0, 2), ["tool_call:t11", "tool_return:t11"])
        assert.deepStrictEqual(contents(window).slice(-1), ["end"])
        const small = yield* store.backfill(c.id, { cap: 4 })
        assert.deepStrictEqual(contents(small), ["tool_call:t29", "tool_return:t29", "end"])
      }).pipe(Effect.provide(makeStore())))

    it.effect("backfill: trace messages only, across segments; orphan returns at the start dropped", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const c = yield* newConversation
        yield* append(c.id, ret("orphan"), user("u1"), reasoning("r1"), requestBegin, assistant("a1"))
        yield* store.commit({
          conversationId: c.id,
          newSegment: true,
          items: [{ item: summary("s") }, { item: user("[context_summary]s[/context_summary]"), contextOnly: true }]
        })
        yield* append(c.id, user("u2"))
        yield* store.commit({ conversationId: c.id, items: [{ item: user("[turn_aborted]x[/turn_aborted]"), contextOnly: true }] })
        assert.deepStrictEqual(contents(yield* store.backfill(c.id)), ["u1", "r1", "a1", "s", "u2"])
        const empty = yield* newConversation
        assert.deepStrictEqual(yield* store.backfill(empty.id), [])
      }).pipe(Effect.provide(makeStore())))
  })
