import * as Reactivity from "@effect/experimental/Reactivity"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as Path from "node:path"
import { makeSqliteClient } from "../../src/services/store/sqlite/Client.js"
import { tempDir } from "../support/tempDir.js"

/**
 * The SQLite store's client (services/store/sqlite/Client.ts): its cheap statements and transactions
 * keep @effect/sql's exclusivity. A transaction holds the connection across its yields, so a
 * statement from another fiber waits for it instead of landing inside it (and being rolled back with
 * it); either kind of transaction opened inside the other is a savepoint of it.
 */

const open = Effect.gen(function*() {
  const sql = yield* makeSqliteClient(Path.join(yield* tempDir, "client.db")).pipe(Effect.provide(Reactivity.layer))
  yield* sql`CREATE TABLE t (v INTEGER NOT NULL)`
  const values = Effect.map(sql<{ readonly v: number }>`SELECT v FROM t ORDER BY v`, (rows) => rows.map((r) => r.v))
  const insert = (v: number) => sql.exec(sql`INSERT INTO t (v) VALUES (${v})`)
  return { insert, sql, values }
})

class Undo {
  readonly _tag = "Undo"
}

describe("SQLite client", () => {
  for (const kind of ["withTransaction", "transaction"] as const) {
    it.scoped(`a statement from another fiber waits for an open ${kind} instead of joining it`, () =>
      Effect.gen(function*() {
        const { insert, sql, values } = yield* open
        const inside = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        const holder = yield* Effect.fork(
          sql[kind](Effect.gen(function*() {
            yield* insert(1)
            yield* Deferred.succeed(inside, undefined)
            yield* Deferred.await(gate)
            return yield* Effect.fail(new Undo())
          }))
        )
        yield* Deferred.await(inside)
        // Forked while the transaction is open: joining it would put 2 inside it, undone with it.
        const other = yield* Effect.fork(insert(2))
        yield* Effect.yieldNow()
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.await(holder)
        yield* Fiber.join(other)
        assert.deepStrictEqual(yield* values, [2])
      }))
  }

  it.scoped("each kind nested in the other is a savepoint: its failure undoes only its own writes", () =>
    Effect.gen(function*() {
      const { insert, sql, values } = yield* open
      yield* sql.transaction(Effect.gen(function*() {
        yield* insert(1)
        yield* sql.withTransaction(Effect.zipRight(insert(2), Effect.fail(new Undo()))).pipe(Effect.ignore)
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* insert(3)
          yield* sql.transaction(Effect.zipRight(insert(4), Effect.fail(new Undo()))).pipe(Effect.ignore)
          yield* insert(5)
        }))
      }))
      assert.deepStrictEqual(yield* values, [1, 3, 5])
      // A failure at the top undoes the whole transaction, savepoints included.
      const failed = yield* sql.transaction(Effect.gen(function*() {
        yield* insert(6)
        yield* sql.withTransaction(insert(7))
        return yield* Effect.fail(new Undo())
      })).pipe(Effect.flip)
      assert.strictEqual(failed._tag, "Undo")
      assert.deepStrictEqual(yield* values, [1, 3, 5])
    }))

  it.scoped("an interrupted transaction is rolled back and frees the connection", () =>
    Effect.gen(function*() {
      const { insert, sql, values } = yield* open
      const inside = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(sql.transaction(Effect.zipRight(insert(1), Effect.zipRight(Deferred.succeed(inside, undefined), Effect.never))))
      yield* Deferred.await(inside)
      yield* Fiber.interrupt(holder)
      yield* insert(2)
      yield* sql.transaction(insert(3))
      assert.deepStrictEqual(yield* values, [2, 3])
    }))
})
