import { assert, describe, it } from "@effect/vitest"
import type { SqlClient } from "@effect/sql/SqlClient"
import { Chunk, Effect, Either, Stream } from "effect"
import * as Path from "node:path"
import type { Chunk as RunChunk } from "../../src/domain/Events.js"
import { Otid, type RunId } from "../../src/domain/Ids.js"
import { openDatabase } from "../../src/services/store/sqlite/Open.js"
import { makeSqliteStore } from "../../src/services/store/sqlite/SqliteStore.js"
import { tempDir } from "../support/tempDir.js"

/**
 * Group commit (services/store/sqlite/GroupCommit.ts): commits waiting together share one SQLite
 * transaction, and each keeps its own outcome. Transactions are counted on the real connection.
 */

/** The connection, counting the transactions begun at the top level (nested ones are savepoints). */
const counting = (sql: SqlClient) => {
  const counter = { top: 0 }
  let depth = 0
  const withTransaction: SqlClient["withTransaction"] = (effect) =>
    Effect.suspend(() => {
      if (depth++ === 0) counter.top++
      return sql.withTransaction(effect).pipe(Effect.ensuring(Effect.sync(() => depth--)))
    })
  const client = new Proxy(sql, { get: (target, key) => (key === "withTransaction" ? withTransaction : Reflect.get(target, key)) })
  return { client, counter }
}

const delta = (runId: RunId, seq: number, content: string): RunChunk => ({ type: "text_delta", content, run_id: runId, seq })

describe("group commit", () => {
  it.scoped("commits arriving together share a transaction; each keeps its own outcome", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, "baton.db")
      const { client, counter } = counting(yield* openDatabase({ filename: path }))
      const store = yield* makeSqliteStore(client, path)
      const runs = yield* Effect.forEach(Array.from({ length: 20 }), (_, i) =>
        Effect.gen(function*() {
          const conversation = yield* store.createConversation({})
          const { run } = yield* store.createRun(conversation.id, Otid.make(`o${i}`), "turn")
          return { conversation: conversation.id, run: run.id }
        }))
      const before = counter.top

      const streamed = runs.map(({ conversation, run }) => store.commit({ conversationId: conversation, chunks: [delta(run, 1, "a"), delta(run, 2, "b")] }))
      // A gap in one run's seq fails that commit alone; one that records an item runs beside them.
      const gap = store.commit({ conversationId: runs[0]!.conversation, chunks: [delta(runs[0]!.run, 9, "x")] })
      const item = store.commit({
        conversationId: runs[1]!.conversation,
        items: [{ item: { type: "user_message", content: "steer", otid: Otid.make("s1") } }]
      })
      const wrongConversation = store.commit({ conversationId: runs[2]!.conversation, chunks: [delta(runs[3]!.run, 3, "y")] })
      const outcomes = yield* Effect.all([...streamed, gap, item, wrongConversation].map(Effect.either), { concurrency: "unbounded" })

      const transactions = counter.top - before
      assert.isAtMost(transactions, 3, `${outcomes.length} commits took ${transactions} transactions`)
      assert.isTrue(outcomes.slice(0, 20).every(Either.isRight))
      const [gapped, recorded, misplaced] = outcomes.slice(20)
      assert.strictEqual(Either.isLeft(gapped!) && gapped.left._tag, "ChunkSeqError")
      assert.isTrue(Either.isRight(recorded!) && recorded.right.length === 1)
      assert.strictEqual(Either.isLeft(misplaced!) && misplaced.left._tag, "NotFound")
      for (const { run } of runs) {
        const stored = Chunk.toReadonlyArray(yield* Stream.runCollect(store.readChunks(run, 0)))
        assert.deepStrictEqual(stored, [delta(run, 1, "a"), delta(run, 2, "b")])
        assert.strictEqual((yield* store.getRun(run)).lastSeq, 2)
      }
      assert.deepStrictEqual((yield* store.listItems(runs[1]!.conversation)).map((s) => s.item.type), ["user_message"])
    }))

  it.scoped("a lone commit is not held back for company, and the next one continues its run", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, "baton.db")
      const { client, counter } = counting(yield* openDatabase({ filename: path }))
      const store = yield* makeSqliteStore(client, path)
      const conversation = yield* store.createConversation({})
      const { run } = yield* store.createRun(conversation.id, Otid.make("o"), "turn")
      const before = counter.top
      for (let seq = 1; seq <= 3; seq++) yield* store.commit({ conversationId: conversation.id, chunks: [delta(run.id, seq, `${seq}`)] })
      assert.strictEqual(counter.top - before, 3)
      assert.strictEqual((yield* store.getRun(run.id)).lastSeq, 3)
    }))
})
