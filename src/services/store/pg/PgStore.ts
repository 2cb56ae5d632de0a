import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Store } from "../../Store.js"
import { makeQueries, type SqlDialect } from "../SqlQueries.js"
import { makeGroupCommit } from "../SqlGroupCommit.js"
import { makeSqlStore } from "../SqlStore.js"
import { corruptError, guard, isLostRace, isRunRace, type PgTarget, retryLostRace } from "./Failures.js"
import { pgGroupStatements } from "./GroupCommit.js"
import { pgOneStatement } from "./OneStatement.js"

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
  toolCallIdOfBody: "(body::jsonb ->> 'tool_call_id')",
  otidOfBody: "(body::jsonb ->> 'otid')",
  lateral: true
}

export const pgQueries = (sql: SqlClient) => makeQueries(sql, dialect)

export interface PgStoreOptions {
  /**
   * The channel on which every commit names its runs, inside the commit itself (NOTIFY is delivered
   * when the commit's transaction commits, so never before its chunks can be read): a cluster's run
   * tail listens there (../PgTail.ts), and no commit costs a round trip of its own to announce.
   */
  readonly announce?: string
}

/** The Store over a pool; its group-commit writer lives in the scope. */
export const makePgStore = (sql: SqlClient, target: PgTarget, options?: PgStoreOptions) =>
  Effect.gen(function*() {
    const channel = options?.announce
    const store = makeSqlStore({
      sql,
      q: pgQueries(sql),
      source: { label: target.label, corrupt: (what) => corruptError(target, what) },
      guard: guard(target),
      retry: retryLostRace,
      one: pgOneStatement(sql, channel),
      uniqueRace: isRunRace,
      ...(channel === undefined ? {} : { announce: (ids: ReadonlyArray<string>) => sql`SELECT pg_notify(${channel}, ${ids.join(",")})` }),
      // Each statement of a READ COMMITTED transaction sees its own snapshot; these reads need one.
      snapshot: (effect) =>
        sql.withTransaction(Effect.zipRight(sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`, effect))
    })
    // A commit is several round trips to the server: the ones waiting together share them and one COMMIT.
    const commit = yield* makeGroupCommit({
      sql,
      label: target.label,
      statements: pgGroupStatements(sql, channel),
      transact: (effect) => effect.pipe(retryLostRace, guard(target)),
      lostRace: isLostRace
    }, store.commit)
    return Store.of({ ...store, commit })
  })
