import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { GroupStatements, RunRow } from "../SqlGroupCommit.js"

/**
 * The group commit's statements in PostgreSQL's words (../SqlGroupCommit.ts): a list is one array
 * parameter, so each statement is one text and one round trip whatever the group's size. The runs
 * are locked in id order: two runners' groups that share runs (a shard taken over while its old
 * owner still writes) wait for each other instead of deadlocking.
 */
/** Names moved runs on the channel `$9`, as few notices as fit PostgreSQL's 8000-byte payload (delivered at commit). */
const TOLD = `,
          told AS (
            SELECT pg_notify($9, p) FROM (
              SELECT string_agg(id, ',') AS p FROM (SELECT id, sum(length(id) + 1) OVER (ORDER BY id) / 7900 AS part FROM moved) ids GROUP BY part
            ) notices
          )`

/** `announce`: the channel on which the streamed part names the runs it moved (a cluster's run tail listens there). */
export const pgGroupStatements = (sql: SqlClient, announce?: string): GroupStatements => ({
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
  writeSteps: (steps, rows, now) =>
    Effect.map(
      sql.unsafe<{ readonly id: string }>(
        `WITH v AS (
            SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS v (id, conversation_id, prev, last)
          ),
          moved AS (
            UPDATE runs SET updated_at = $5, last_seq = v.last
            FROM (SELECT id FROM runs WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE) AS held, v
            WHERE runs.id = held.id AND v.id = runs.id AND runs.conversation_id = v.conversation_id AND runs.last_seq = v.prev
            RETURNING runs.id
          ),
          added AS (
            INSERT INTO chunks (run_id, seq, body)
            SELECT c.run_id, c.seq, c.body FROM unnest($6::text[], $7::bigint[], $8::text[]) AS c (run_id, seq, body)
            WHERE c.run_id IN (SELECT id FROM moved)
          )${announce === undefined ? "" : TOLD}
          SELECT id${announce === undefined ? "" : ", (SELECT count(*) FROM told) AS told"} FROM moved`,
        [
          steps.map((s) => s.id),
          steps.map((s) => s.conversation_id),
          steps.map((s) => s.prev),
          steps.map((s) => s.last),
          now,
          rows.map((r) => r.run_id),
          rows.map((r) => r.seq),
          rows.map((r) => r.body),
          ...(announce === undefined ? [] : [announce])
        ]
      ),
      (moved) => moved.map((r) => r.id)
    ),
  setLastSeqs: (runs) =>
    Effect.asVoid(sql.unsafe(`UPDATE runs SET last_seq = v.last FROM unnest($1::text[], $2::bigint[]) AS v (id, last) WHERE runs.id = v.id`, [
      runs.map(([id]) => id),
      runs.map(([, last]) => last)
    ]))
})
