import type { SqlClient } from "@effect/sql/SqlClient"
import { makeQueries, type SqlDialect } from "../SqlQueries.js"
import { makeSqlStore } from "../SqlStore.js"
import { corruptError, guard, retryBusy } from "./Failures.js"

/**
 * services/store/sqlite/ is the Store on one SQLite file: opening and checking it (Open, Header),
 * the schema and its migrations, and how SQLite's failures become StoreErrors (and lost races
 * retries, through the recovery policy). The statements and the store itself are shared with
 * PostgreSQL (../SqlQueries, ../SqlStore, ../SqlCommit); this is what SQLite says differently.
 */

const dialect: SqlDialect = {
  indexedBy: (index) => `INDEXED BY ${index}`,
  nextTouch: "(SELECT coalesce(max(touched), 0) + 1 FROM conversations)",
  runOrder: "created_at, rowid",
  // One writer at a time holds the whole file; there is no row lock to take.
  lockRow: "",
  toolCallIdOfBody: "json_extract(body, '$.tool_call_id')"
}

export const sqliteQueries = (sql: SqlClient) => makeQueries(sql, dialect)

/** The Store over one SQLite connection; `path` names the file in every error. */
export const makeSqliteStore = (sql: SqlClient, path: string) =>
  makeSqlStore({
    sql,
    q: sqliteQueries(sql),
    source: { label: path, corrupt: (what) => corruptError(path, what) },
    guard: guard(path),
    retry: retryBusy,
    snapshot: (effect) => sql.withTransaction(effect)
  })
