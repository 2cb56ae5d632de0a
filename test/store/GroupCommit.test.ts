import { assert, describe, it } from "@effect/vitest"
import type { SqlClient } from "@effect/sql/SqlClient"
import { Chunk, Clock, Effect, Either, Exit, Fiber, Scope, Stream } from "effect"
import * as Path from "node:path"
import type { StoreError } from "../../src/domain/Errors.js"
import type { Chunk as RunChunk } from "../../src/domain/Events.js"
import { Otid, type RunId } from "../../src/domain/Ids.js"
import { openDatabase as openPg } from "../../src/services/store/pg/Open.js"
import { makePgStore } from "../../src/services/store/pg/PgStore.js"
import { openDatabase } from "../../src/services/store/sqlite/Open.js"
import { makeSqliteStore } from "../../src/services/store/sqlite/SqliteStore.js"
import type { Store } from "../../src/services/Store.js"
import { freshSchema, TEST_DATABASE_URL } from "../support/pgDatabase.js"
import { conversationsWithRuns } from "../support/runningRuns.js"
import { tempDir } from "../support/tempDir.js"

/**
 * Group commit (services/store/SqlGroupCommit.ts): commits waiting together share one transaction,
 * and each keeps its own outcome, on SQLite and on PostgreSQL. Transactions are counted on the real
 * connection.
 */

/**
 * The connection, counting the transactions begun at the top level (nested ones are savepoints),
 * through `withTransaction` or the SQLite client's own `transaction`.
 */
const counting = <S extends SqlClient>(sql: S) => {
  const counter = { top: 0 }
  let depth = 0
  const counted = (begin: SqlClient["withTransaction"]): SqlClient["withTransaction"] => (effect) =>
    Effect.suspend(() => {
      if (depth++ === 0) counter.top++
      return begin(effect).pipe(Effect.ensuring(Effect.sync(() => depth--)))
    })
  const client = new Proxy(sql, {
    get: (target, key) => {
      const value: unknown = Reflect.get(target, key)
      return (key === "withTransaction" || key === "transaction") && typeof value === "function"
        ? counted(value as SqlClient["withTransaction"])
        : value
    }
  })
  return { client, counter }
}

const delta = (runId: RunId, seq: number, content: string): RunChunk => ({ type: "text_delta", content, run_id: runId, seq })

interface Opened {
  readonly store: Store["Type"]
  readonly counter: { readonly top: number }
  /** The database itself, behind the store's back. */
  readonly raw: SqlClient
}

type Open = Effect.Effect<Opened, StoreError, Scope.Scope>

const sqlite: Open = Effect.gen(function*() {
  const dir = yield* tempDir
  const path = Path.join(dir, "baton.db")
  const raw = yield* openDatabase({ filename: path })
  const { client, counter } = counting(raw)
  return { store: yield* makeSqliteStore(client, path), counter, raw }
})

// Connections made on the real clock (see pgDatabase.ts's pgStore).
const postgres: Open = Effect.gen(function*() {
  const { url } = yield* freshSchema
  const { sql, target } = yield* openPg({ url })
  const { client, counter } = counting(sql)
  return { store: yield* makePgStore(client, target), counter, raw: sql }
}).pipe(Effect.withClock(Clock.make()))

const engines: ReadonlyArray<readonly [string, Open]> = [
  ["SQLite", sqlite],
  ...(TEST_DATABASE_URL === undefined || TEST_DATABASE_URL === "" ? [] : [["PostgreSQL", postgres] as const])
]

describe.each(engines)("group commit on %s", (name, open) => {
  it.scoped("commits arriving together share a transaction; each keeps its own outcome", () =>
    Effect.gen(function*() {
      const { counter, store } = yield* open
      const runs = yield* conversationsWithRuns(store, 20)
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

  it.scoped("an idle writer woken by one commit takes the others queued with it into the same group", () =>
    Effect.gen(function*() {
      const { counter, store } = yield* open
      const runs = yield* conversationsWithRuns(store, 10)
      const before = counter.top
      yield* Effect.all(runs.map(({ conversation, run }) => store.commit({ conversationId: conversation, chunks: [delta(run, 1, "a")] })), {
        concurrency: "unbounded"
      })
      // Queue.takeBetween(1, n) handed the waking writer the first commit alone: two groups.
      assert.strictEqual(counter.top - before, name === "SQLite" ? 1 : 0)
    }))

  it.scoped("a lone commit is not held back for company, and the next one continues its run", () =>
    Effect.gen(function*() {
      const { counter, store } = yield* open
      const conversation = yield* store.createConversation({})
      const { run } = yield* store.createRun(conversation.id, Otid.make("o"), "turn")
      const before = counter.top
      for (let seq = 1; seq <= 3; seq++) yield* store.commit({ conversationId: conversation.id, chunks: [delta(run.id, seq, `${seq}`)] })
      // PostgreSQL writes each as one statement, no transaction round trips (test/store/PgRoundTrips counts them).
      assert.strictEqual(counter.top - before, name === "SQLite" ? 3 : 0)
      assert.strictEqual((yield* store.getRun(run.id)).lastSeq, 3)
    }))

  it.scoped("a streamed commit the database refuses fails alone; the others of its group are kept", () =>
    Effect.gen(function*() {
      const { counter, raw, store } = yield* open
      const runs = yield* conversationsWithRuns(store, 5)
      // Another writer left a chunk the run's row does not count (a stale owner, say): the insert
      // of seq 1 for that run is refused by the database itself, not by the check.
      yield* Effect.orDie(raw`INSERT INTO chunks (run_id, seq, body) VALUES (${runs[2]!.run}, 1, ${JSON.stringify(delta(runs[2]!.run, 1, "z"))})`)
      const before = counter.top
      const outcomes = yield* Effect.all(
        runs.map(({ conversation, run }) => Effect.either(store.commit({ conversationId: conversation, chunks: [delta(run, 1, "a")] }))),
        { concurrency: "unbounded" }
      )
      // Together, or the group's part in this would not be shown.
      assert.isAtMost(counter.top - before, 2)
      assert.isTrue(Either.isLeft(outcomes[2]!) && outcomes[2].left._tag === "StoreError")
      assert.deepStrictEqual(outcomes.map(Either.isRight), [true, true, false, true, true])
      for (const { run } of runs.filter((_, i) => i !== 2)) {
        assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Stream.runCollect(store.readChunks(run, 0))), [delta(run, 1, "a")])
      }
      assert.strictEqual((yield* store.getRun(runs[2]!.run)).lastSeq, 0)
    }))

  it.effect("commits handed to the writer as its scope closes are written, not dropped; later ones fail as closed", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { store } = yield* Scope.extend(open, scope)
      const runs = yield* conversationsWithRuns(store, 3)
      const commits = yield* Effect.forEach(runs, ({ conversation, run }) =>
        Effect.fork(store.commit({ conversationId: conversation, chunks: [delta(run, 1, "a")] })))
      // The commits reach the idle writer, which has not yet run with them, when the scope closes.
      yield* Effect.yieldNow()
      yield* Scope.close(scope, Exit.void)
      const outcomes = yield* Effect.forEach(commits, (fiber) => Effect.either(Fiber.join(fiber)))
      assert.deepStrictEqual(outcomes.map(Either.isRight), [true, true, true])
      const late = yield* Effect.either(store.commit({ conversationId: runs[0]!.conversation, chunks: [delta(runs[0]!.run, 2, "b")] }))
      assert.isTrue(Either.isLeft(late) && late.left._tag === "StoreError" && late.left.reason === "closed")
    }).pipe(Effect.withClock(Clock.make())))
})
