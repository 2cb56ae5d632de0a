import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import * as Path from "node:path"
import type { NewItem } from "../../src/domain/History.js"
import { Otid } from "../../src/domain/Ids.js"
import { ContextCache } from "../../src/programs/backend/ContextCache.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import { Store } from "../../src/services/Store.js"
import { tempDir } from "../support/tempDir.js"

/**
 * The cache of a conversation's current segment never answers with less than the Store holds: every
 * write below goes to the Store directly, as another process (a cluster's other runner, a second
 * `baton` on the same file) would make it, and the next look sees it.
 */

const said = (text: string, otid: string): ReadonlyArray<NewItem> => [
  { item: { type: "user_message", content: text, otid: Otid.make(otid) } },
  { item: { type: "assistant_message", content: `re: ${text}` } }
]

const setup = Effect.gen(function*() {
  const dir = yield* tempDir
  const store = layerSqlite({ filename: Path.join(dir, "baton.db") })
  const context = yield* Layer.build(ContextCache.Default.pipe(Layer.provideMerge(store)))
  return { store: yield* Effect.provide(Store, context), cache: yield* Effect.provide(ContextCache, context) }
})

const texts = (items: ReadonlyArray<{ readonly item: { readonly type: string } }>) =>
  items.map((s) => ("content" in s.item ? String(s.item.content) : s.item.type))

describe("ContextCache", () => {
  it.scoped("takes in what another writer committed, and a new segment replaces the old one", () =>
    Effect.gen(function*() {
      const { cache, store } = yield* setup
      const { id } = yield* store.createConversation({})
      yield* store.commit({ conversationId: id, items: said("one", "o1") })
      assert.deepStrictEqual(texts(yield* cache.context(id)), ["one", "re: one"])

      yield* store.commit({ conversationId: id, items: said("two", "o2") })
      assert.deepStrictEqual(texts(yield* cache.context(id)), ["one", "re: one", "two", "re: two"])
      assert.deepStrictEqual(yield* cache.context(id), yield* store.modelContext(id))

      // A compaction: a new segment that starts with the summary.
      yield* store.commit({
        conversationId: id,
        newSegment: true,
        items: [{ item: { type: "user_message", content: "summary", otid: Otid.make("s") }, contextOnly: true }, ...said("three", "o3")]
      })
      const view = yield* cache.segment(id)
      assert.strictEqual(view.segment, 2)
      assert.deepStrictEqual(texts(view.items), ["summary", "three", "re: three"])
      assert.deepStrictEqual(yield* cache.context(id), yield* store.modelContext(id))
      assert.deepStrictEqual(view.items, yield* store.segmentItems(id, 2))
    }))

  it.scoped("a view already handed out does not change when more is taken in; drop and a deleted conversation are forgotten", () =>
    Effect.gen(function*() {
      const { cache, store } = yield* setup
      const { id } = yield* store.createConversation({})
      yield* store.commit({ conversationId: id, items: said("one", "o1") })
      const before = yield* cache.context(id)
      yield* store.commit({ conversationId: id, items: said("two", "o2") })
      yield* cache.context(id)
      assert.strictEqual(before.length, 2)

      yield* cache.drop(id)
      assert.deepStrictEqual(texts(yield* cache.context(id)), ["one", "re: one", "two", "re: two"])

      yield* store.deleteConversation(id)
      const gone = yield* Effect.exit(cache.context(id))
      assert.isTrue(Exit.isFailure(gone))
      assert.strictEqual(Exit.isFailure(gone) && gone.cause._tag === "Fail" ? gone.cause.error._tag : "", "NotFound")
    }))
})
