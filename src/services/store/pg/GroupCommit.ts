import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { GroupStatements, RunRow } from "../SqlGroupCommit.js"

/**
 * The group commit's statements in PostgreSQL's words (../SqlGroupCommit.ts): a list is one array
 * parameter, so each statement is one text and one round trip whatever the group's size. The runs
 * are locked in id order: two runners' groups that share runs (a shard taken over while its old
 * owner still writes) wait for each other instead of deadlocking.
 */
export const pgGroupStatements = (sql: SqlClient): GroupStatements => ({
  lockRuns: (ids, now) =>
    sql.unsafe<RunRow>(
      `UPDATE runs SET updated_at = $1
        FROM (SELECT id FROM runs WHERE id = ANY($2::text[]) ORDER BY id FOR UPDATE) AS held
        WHERE runs.id = held.id RETURNING runs.id, runs.conversation_id, runs.last_seq`,
      [now, ids]
    ),
  insertChunks: (rows) =>
    Effect.asVoid(sql.unsafe(`INSERT INTO chunks (run_id, seq, body) SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])`, [
      rows.map((r) => r.run_id),
      rows.map((r) => r.seq),
      rows.map((r) => r.body)
    ])),
  setLastSeqs: (runs) =>
    Effect.asVoid(sql.unsafe(`UPDATE runs SET last_seq = v.last FROM unnest($1::text[], $2::bigint[]) AS v (id, last) WHERE runs.id = v.id`, [
      runs.map(([id]) => id),
      runs.map(([, last]) => last)
    ]))
})
