import { Effect } from "effect"
import { Store } from "../../Store.js"
import { makeQueries, type SqlDialect } from "../SqlQueries.js"
import { makeSqlStore } from "../SqlStore.js"
import { makeGroupCommit } from "../SqlGroupCommit.js"
import type { SqliteSql } from "./Client.js"
import { corruptError, guard, isTransientBusy, retryBusy } from "./Failures.js"
import { sqliteGroupStatements } from "./GroupCommit.js"

/**
 * services/store/sqlite/ is the Store on one SQLite file: opening and checking it (Open, Header),
 * the schema and its migrations, how SQLite's failures become StoreErrors (and lost races
 * retries, through the recovery policy), and the group commit that puts the commits waiting
 * together into one transaction. The statements and the store itself are shared with PostgreSQL
 * (../SqlQueries, ../SqlStore, ../SqlCommit); this is what SQLite says and does differently.
 */

const dialect: SqlDialect = {
  indexedBy: (index) => `INDEXED BY ${index}`,
  nextTouch: "(SELECT coalesce(max(touched), 0) + 1 FROM conversations)",
  runOrder: "created_at, rowid",
  // One writer at a time holds the whole file; there is no row lock to take.
  lockRow: "",
  toolCallIdOfBody: "json_extract(body, '$.tool_call_id')",
  otidOfBody: "json_extract(body, '$.otid')",
  lateral: false
}

export const sqliteQueries = (sql: SqliteSql) => makeQueries(sql, dialect)

/** The Store over one SQLite connection; `path` names the file in every error. Its group-commit writer lives in the scope. */
export const makeSqliteStore = (sql: SqliteSql, path: string) =>
  Effect.gen(function*() {
    const store = makeSqlStore({
      sql,
      q: sqliteQueries(sql),
      source: { label: path, corrupt: (what) => corruptError(path, what) },
      guard: guard(path),
      retry: retryBusy,
      snapshot: sql.transaction,
      exec: sql.exec,
      transaction: sql.transaction
    })
    // One connection serialises every write anyway: let the writes that wait together share a transaction.
    const commit = yield* makeGroupCommit({
      sql,
      label: path,
      statements: sqliteGroupStatements(sql),
      transact: (effect) => effect.pipe(retryBusy, guard(path)),
      lostRace: isTransientBusy,
      transaction: sql.transaction
    }, store.commit)
    return Store.of({ ...store, commit })
  })
