import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { ItemRow, OneStatement, Planned } from "../SqlPlan.js"

/**
 * A commit and a run's creation as one PostgreSQL statement each (../SqlPlan.ts): data-modifying
 * CTEs, every list one array parameter. A statement is atomic on its own, so it needs no BEGIN,
 * COMMIT or savepoint: one round trip. Its checks read rows it locks (FOR UPDATE: under READ
 * COMMITTED a row another writer changed meanwhile is read as that writer left it), and every
 * write waits on the checks, so a refused commit writes nothing and says so instead of failing;
 * inside a group's transaction it leaves the others' writes standing without a savepoint.
 */

const RUN = "id, conversation_id, otid, kind, status, stop_reason, last_seq, owner, created_at, updated_at"

/** The items' columns as parameters from `at` on, and the INSERT taking them at the positions `head` leaves. */
const itemParams = (items: ReadonlyArray<ItemRow>) => [
  items.map((i) => i.id),
  items.map((i) => i.in_context),
  items.map((i) => i.in_trace),
  items.map((i) => i.is_message),
  items.map((i) => i.type),
  items.map((i) => i.body)
]

const insertItems = (at: number, conversation: string, now: string, count: string) =>
  `INSERT INTO items (conversation_id, position, id, segment, in_context, in_trace, is_message, type, body, created_at)
    SELECT ${conversation}, h.last_position - ${count} + i.ord, i.id, h.segment, i.in_context, i.in_trace, i.is_message, i.type, i.body, ${now}
    FROM head h, unnest($${at}::text[], $${at + 1}::smallint[], $${at + 2}::smallint[], $${at + 3}::smallint[], $${at + 4}::text[], $${at + 5}::text[])
      WITH ORDINALITY AS i (id, in_context, in_trace, is_message, type, body, ord)`

/** The commit; `announce`: its runs named on the channel `$29` (delivered when it commits). */
const commitText = (announce: boolean) => `WITH conv AS (
    SELECT id, last_position, segment FROM conversations WHERE id = $1 FOR UPDATE
  ),
  v AS (
    SELECT * FROM unnest($5::text[], $6::bigint[], $7::bigint[], $8::text[], $9::text[]) AS v (id, prev, last, status, stop_reason)
  ),
  held AS (
    SELECT r.id FROM runs r JOIN v ON v.id = r.id
    WHERE r.conversation_id = $1 AND (v.prev IS NULL OR r.last_seq = v.prev)
    ORDER BY r.id FOR UPDATE OF r
  ),
  ok AS (
    SELECT 1 FROM conv WHERE (SELECT count(*) FROM held) = cardinality($5::text[])
  ),
  head AS (
    UPDATE conversations SET updated_at = $2, touched = nextval('conversation_touches'), last_position = last_position + $4
    WHERE id = $1 AND $3 AND EXISTS (SELECT 1 FROM ok) RETURNING last_position, segment
  ),
  stamped AS (
    UPDATE runs SET updated_at = $2, last_seq = coalesce(v.last, runs.last_seq), status = coalesce(v.status, runs.status),
      stop_reason = CASE WHEN v.status IS NULL THEN runs.stop_reason ELSE v.stop_reason END
    FROM v WHERE runs.id = v.id AND EXISTS (SELECT 1 FROM ok)
  ),
  added AS (${insertItems(10, "$1", "$2", "$4")}),
  streamed AS (
    INSERT INTO chunks (run_id, seq, body)
    SELECT * FROM unnest($16::text[], $17::bigint[], $18::text[]) WHERE EXISTS (SELECT 1 FROM ok)
  ),
  taken AS (
    DELETE FROM steering WHERE conversation_id = $1 AND (body::jsonb ->> 'otid') = ANY($19::text[]) AND EXISTS (SELECT 1 FROM ok)
  ),
  used AS (
    INSERT INTO usage (conversation_id, run_id, purpose, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, created_at)
    SELECT * FROM unnest($20::text[], $21::text[], $22::text[], $23::text[], $24::bigint[], $25::bigint[], $26::bigint[], $27::bigint[], $28::bigint[])
    WHERE EXISTS (SELECT 1 FROM ok)
  )${
  announce
    ? `,
  told AS (
    SELECT pg_notify($29, string_agg(id, ',')) FROM v WHERE EXISTS (SELECT 1 FROM ok) HAVING count(*) > 0
  )`
    : ""
}
  SELECT (SELECT count(*) FROM conv) AS found, (SELECT count(*) FROM ok) AS ok,${announce ? " (SELECT count(*) FROM told) AS told," : ""}
    coalesce((SELECT last_position FROM head), (SELECT last_position FROM conv)) AS last_position,
    coalesce((SELECT segment FROM head), (SELECT segment FROM conv)) AS segment`

// The checks' snapshot is the statement's, taken before it waits for the conversation's row: a run
// another writer created meanwhile is not seen, and the insert then fails on the unique indexes
// (runs_otid, runs_running); the caller decides again with fresh reads.
const CREATE_RUN = `WITH conv AS (
    SELECT id FROM conversations WHERE id = $1 FOR UPDATE
  ),
  found AS (
    SELECT ${RUN} FROM runs WHERE conversation_id = $1 AND otid = $2
    UNION ALL
    SELECT ${RUN} FROM runs WHERE conversation_id = $1 AND status = 'running'
  ),
  made AS (
    INSERT INTO runs (id, conversation_id, otid, kind, status, last_seq, owner, created_at, updated_at)
    SELECT $3, $1, $2, $4, 'running', 0, $5, $6, $6 FROM conv WHERE NOT EXISTS (SELECT 1 FROM found)
    RETURNING id
  ),
  head AS (
    UPDATE conversations SET updated_at = $6, touched = nextval('conversation_touches'), last_position = last_position + $7
    WHERE id = $1 AND $7 > 0 AND EXISTS (SELECT 1 FROM made) RETURNING last_position, segment
  ),
  added AS (${insertItems(8, "$1", "$6", "$7")}),
  taken AS (
    DELETE FROM steering WHERE conversation_id = $1 AND (body::jsonb ->> 'otid') = ANY($14::text[]) AND EXISTS (SELECT 1 FROM made)
  )
  SELECT c.n AS conversations, f.* FROM (SELECT count(*) AS n FROM conv) c LEFT JOIN found f ON true`

interface CommitRow {
  readonly found: string | number
  readonly ok: string | number
  readonly last_position: string | number | null
  readonly segment: string | number | null
}

/** `announce`: the channel on which each commit names its runs (a cluster's run tail listens there). */
export const pgOneStatement = (sql: SqlClient, announce?: string): OneStatement => {
  const commit = commitText(announce !== undefined)
  return {
    commit: (p: Planned) =>
      Effect.map(
        sql.unsafe<CommitRow>(commit, [
          p.conversationId,
          p.now,
          p.records,
          p.items.length,
          p.runs.map((r) => r.id),
          p.runs.map((r) => r.prev),
          p.runs.map((r) => r.last),
          p.runs.map((r) => r.status),
          p.runs.map((r) => r.stopReason),
          ...itemParams(p.items),
          p.chunks.map((c) => c.run_id),
          p.chunks.map((c) => c.seq),
          p.chunks.map((c) => c.body),
          p.steering,
          p.usage.map((u) => u.conversation_id),
          p.usage.map((u) => u.run_id ?? null),
          p.usage.map((u) => u.purpose),
          p.usage.map((u) => u.model),
          p.usage.map((u) => u.input_tokens),
          p.usage.map((u) => u.output_tokens),
          p.usage.map((u) => u.cache_read_tokens),
          p.usage.map((u) => u.cache_write_tokens),
          p.usage.map((u) => u.created_at),
          ...(announce === undefined ? [] : [announce])
        ]),
        ([row]) => ({
          found: Number(row?.found ?? 0) > 0,
          ok: Number(row?.ok ?? 0) > 0,
          lastPosition: Number(row?.last_position ?? 0),
          segment: Number(row?.segment ?? 0)
        })
      ),

    createRun: (run, input) => {
      const items = input?.items ?? []
      return Effect.map(
        sql.unsafe<{ readonly conversations: string | number; readonly id: string | null }>(CREATE_RUN, [
          run.conversation_id,
          run.otid,
          run.id,
          run.kind,
          run.owner,
          run.created_at,
          items.length,
          ...itemParams(items),
          input?.steering ?? []
        ]),
        (rows) => ({ found: Number(rows[0]?.conversations ?? 0) > 0, existing: rows.filter((r) => r.id !== null) })
      )
    }
  }
}
