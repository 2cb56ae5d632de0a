import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { StepStatements } from "../GroupSteps.js"

/** Names moved runs on the channel `$9`, as few notices as fit PostgreSQL's 8000-byte payload (delivered at commit). */
const TOLD = `,
          told AS (
            SELECT pg_notify($9, p) FROM (
              SELECT string_agg(id, ',') AS p FROM (SELECT id, sum(length(id) + 1) OVER (ORDER BY id) / 7900 AS part FROM moved) ids GROUP BY part
            ) notices
          )`

/**
 * The group commit's streamed part in PostgreSQL's words (../GroupSteps.ts): one statement, each
 * list one array parameter, whatever the group's size. The runs are locked in id order: two
 * runners' groups that share runs (a shard taken over while its old owner still writes) wait for
 * each other instead of deadlocking. `announce`: the channel on which it names the runs it moved
 * (a cluster's run tail listens there).
 */
export const pgGroupStatements = (sql: SqlClient, announce?: string): StepStatements => ({
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
    )
})
