import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Option, TestClock } from "effect"
import { defaultCompactionSettings } from "../../../src/domain/Settings.js"
import { ConversationId, Otid } from "../../../src/domain/Ids.js"
import { Store } from "../../../src/services/Store.js"
import { append, call, chunk, type MakeStore, newConversation, readAll, user } from "./fixtures.js"

export const conversationContract = (makeStore: MakeStore) =>
  describe("conversations", () => {
    it.effect("create fills settings defaults, stamps the clock and reads back", () =>
      Effect.gen(function*() {
        const store = yield* Store
        yield* TestClock.adjust(1234)
        const created = yield* store.createConversation(
          { system_prompt: "be brief", tools: [{ name: "Read", description: "read", parameters: {} }] },
          { title: "first" }
        )
        assert.match(created.id, /^conv-[0-9a-f-]{36}$/)
        assert.strictEqual(created.title, "first")
        assert.strictEqual(created.created_at, 1234)
        assert.strictEqual(created.updated_at, 1234)
        assert.strictEqual(created.settings.system_prompt, "be brief")
        assert.deepStrictEqual(created.settings.compaction, defaultCompactionSettings)
        assert.deepStrictEqual(yield* store.getConversation(created.id), created)
        const bare = yield* store.createConversation({})
        assert.strictEqual(bare.title, undefined)
        assert.deepStrictEqual(bare.settings.tools, [])
        assert.notStrictEqual(bare.id, created.id)
      }).pipe(Effect.provide(makeStore())))

    it.effect("get, update and delete of an unknown conversation fail with NotFound", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const missing = ConversationId.make("conv-missing")
        const errors = [
          yield* Effect.flip(store.getConversation(missing)),
          yield* Effect.flip(store.updateConversation(missing, { title: "x" })),
          yield* Effect.flip(store.deleteConversation(missing))
        ]
        for (const e of errors) {
          assert.strictEqual(e._tag, "NotFound")
          if (e._tag === "NotFound") assert.deepStrictEqual([e.entity, e.id], ["conversation", missing])
        }
      }).pipe(Effect.provide(makeStore())))

    it.effect("update replaces settings and title and moves the conversation to the front", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const a = yield* newConversation
        yield* TestClock.adjust(10)
        const b = yield* newConversation
        yield* TestClock.adjust(10)
        const settings = { ...a.settings, system_prompt: "new prompt", model: "m-1" }
        const updated = yield* store.updateConversation(a.id, { settings, title: "renamed" })
        assert.deepStrictEqual(updated.settings, settings)
        assert.strictEqual(updated.title, "renamed")
        assert.strictEqual(updated.updated_at, 20)
        assert.strictEqual(updated.created_at, 0)
        assert.deepStrictEqual(yield* store.getConversation(a.id), updated)
        const titleOnly = yield* store.updateConversation(a.id, { title: "again" })
        assert.deepStrictEqual(titleOnly.settings, settings)
        const list = yield* store.listConversations()
        assert.deepStrictEqual(list.items.map((c) => c.id), [a.id, b.id])
      }).pipe(Effect.provide(makeStore())))

    it.effect("list is newest first by updated_at (commits count), paged with an opaque cursor", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const ids: Array<ConversationId> = []
        for (let i = 0; i < 5; i++) {
          yield* TestClock.adjust(100)
          ids.push((yield* newConversation).id)
        }
        yield* TestClock.adjust(100)
        yield* append(ids[1]!, user("bump"))
        const expected = [ids[1]!, ids[4]!, ids[3]!, ids[2]!, ids[0]!]
        const seen: Array<string> = []
        let before: string | undefined
        let pages = 0
        do {
          const page = yield* store.listConversations(before === undefined ? { limit: 2 } : { limit: 2, before })
          seen.push(...page.items.map((c) => c.id))
          before = page.next
          pages++
          assert.isTrue(pages <= 3)
        } while (before !== undefined)
        assert.deepStrictEqual(seen, expected)
        assert.strictEqual(pages, 3)
        const all = yield* store.listConversations()
        assert.deepStrictEqual(all.items.map((c) => c.id), expected)
        assert.isUndefined(all.next)
      }).pipe(Effect.provide(makeStore())))

    it.effect("list breaks updated_at ties by the latest touch", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const a = yield* newConversation
        const b = yield* newConversation
        const c = yield* newConversation
        yield* store.updateConversation(a.id, { title: "touched" })
        const first = yield* store.listConversations({ limit: 1 })
        const rest = yield* store.listConversations({ limit: 5, before: first.next! })
        assert.deepStrictEqual([...first.items, ...rest.items].map((x) => x.id), [a.id, c.id, b.id])
      }).pipe(Effect.provide(makeStore())))

    it.effect("a cursor that the store did not make is InvalidInput", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const e = yield* Effect.flip(store.listConversations({ before: "not-a-cursor" }))
        assert.strictEqual(e._tag, "InvalidInput")
      }).pipe(Effect.provide(makeStore())))

    it.effect("delete cascades to items, runs and chunks and leaves other conversations alone", () =>
      Effect.gen(function*() {
        const store = yield* Store
        const doomed = yield* newConversation
        const kept = yield* newConversation
        const [item] = yield* append(doomed.id, user("hello"), call("t1"))
        const { run } = yield* store.createRun(doomed.id, Otid.make("otid-1"), "turn")
        yield* store.commit({ conversationId: doomed.id, chunks: [chunk(run.id, 1), chunk(run.id, 2)] })
        const [keptItem] = yield* append(kept.id, user("stay"))
        const keptRun = yield* store.createRun(kept.id, Otid.make("otid-1"), "turn")

        yield* store.deleteConversation(doomed.id)

        assert.strictEqual((yield* Effect.flip(store.getConversation(doomed.id)))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(store.getItem(item!.id)))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(store.getRun(run.id)))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(readAll(run.id)))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(store.listItems(doomed.id)))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(store.pendingApprovals(doomed.id)))._tag, "NotFound")
        assert.isTrue(Option.isNone(yield* store.runByOtid(doomed.id, Otid.make("otid-1"))))
        assert.isTrue(Option.isNone(yield* store.activeRun(doomed.id)))
        assert.deepStrictEqual((yield* store.runningRuns).map((r) => r.id), [keptRun.run.id])
        assert.deepStrictEqual((yield* store.listConversations()).items.map((c) => c.id), [kept.id])
        assert.strictEqual((yield* Effect.flip(store.deleteConversation(doomed.id)))._tag, "NotFound")

        assert.deepStrictEqual(yield* store.getItem(keptItem!.id), keptItem)
        assert.strictEqual((yield* store.getRun(keptRun.run.id)).id, keptRun.run.id)
        // The deleted conversation's otid is free again only for a new conversation; the kept one still answers.
        const again = yield* store.createRun(kept.id, Otid.make("otid-1"), "turn")
        assert.isFalse(again.created)
      }).pipe(Effect.provide(makeStore())))

    it.effect("concurrent creates get distinct ids", () =>
      Effect.gen(function*() {
        const created = yield* Effect.all(Array.from({ length: 20 }, () => newConversation), { concurrency: "unbounded" })
        assert.strictEqual(new Set(created.map((c) => c.id)).size, 20)
        const store = yield* Store
        assert.strictEqual((yield* store.listConversations({ limit: 100 })).items.length, 20)
        assert.isTrue(Exit.isSuccess(yield* Effect.exit(store.getConversation(created[7]!.id))))
      }).pipe(Effect.provide(makeStore())))
  })
