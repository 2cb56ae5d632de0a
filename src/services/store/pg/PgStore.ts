import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { makeQueries, type SqlDialect } from "../SqlQueries.js"
import { makeSqlStore } from "../SqlStore.js"
import { corruptError, guard, type PgTarget, retryLostRace } from "./Failures.js"

/**
 * services/store/pg/ is the Store on PostgreSQL: connecting and checking the server (Open), the
 * schema and its migrations, the URL's redaction, and how PostgreSQL's failures become StoreErrors.
 * The statements and the store itself are shared with SQLite (../SqlQueries, ../SqlStore,
 * ../SqlCommit); this is what PostgreSQL says differently.
 */

const dialect: SqlDialect = {
  // The planner picks; test/store/PgIndexes.test.ts checks the plans instead.
  indexedBy: () => "",
  nextTouch: "nextval('conversation_touches')",
  runOrder: "created",
  // Several processes write one database: createRun holds the conversation's row while it decides.
  lockRow: " FOR UPDATE",
  toolCallIdOfBody: "(body::jsonb ->> 'tool_call_id')"
}

export const pgQueries = (sql: SqlClient) => makeQueries(sql, dialect)

export const makePgStore = (sql: SqlClient, target: PgTarget) =>
  makeSqlStore({
    sql,
    q: pgQueries(sql),
    source: { label: target.label, corrupt: (what) => corruptError(target, what) },
    guard: guard(target),
    retry: retryLostRace,
    // Each statement of a READ COMMITTED transaction sees its own snapshot; these reads need one.
    snapshot: (effect) =>
      sql.withTransaction(Effect.zipRight(sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`, effect))
  })
