import { assert, it } from "@effect/vitest"
import { Effect } from "effect"
import { openDatabase } from "../../src/services/store/pg/Open.js"
import { pgQueries } from "../../src/services/store/pg/PgStore.js"
import { freshSchema, onPostgres } from "../support/pgDatabase.js"

/**
 * The resume questions are index lookups on PostgreSQL too. PostgreSQL has no INDEXED BY, and its
 * planner rightly scans a small table, so the plans are read off an analyzed store of some size (20
 * conversations of 1000 items, runs with chunks) with scans and sorts priced out: a plan that still
 * scans a table, sorts, or misses its index has no index to serve it.
 */
const populate = (sql: Parameters<typeof pgQueries>[0]) =>
  Effect.gen(function*() {
    yield* sql`INSERT INTO conversations (id, settings, created_at, updated_at, touched)
      SELECT 'conv-' || c, '{}', c, c, c FROM generate_series(1, 20) c`
    yield* sql`INSERT INTO items (conversation_id, position, id, segment, in_context, in_trace, is_message, type, body, created_at)
      SELECT 'conv-' || c, p, 'msg-' || c || '-' || p, 1 + p / 250, (p % 3 <> 0)::int, (p % 5 <> 0)::int, p % 2, 'user_message', '{}', p
      FROM generate_series(1, 20) c, generate_series(1, 1000) p`
    yield* sql`INSERT INTO open_calls SELECT 'conv-' || c, p, 'call-' || p FROM generate_series(1, 20) c, generate_series(995, 1000) p`
    yield* sql`INSERT INTO runs (id, conversation_id, otid, kind, status, last_seq, created_at, updated_at)
      SELECT 'run-' || c || '-' || r, 'conv-' || c, 'otid-' || r, 'turn', CASE WHEN r = 10 THEN 'running' ELSE 'completed' END, 100, r, r
      FROM generate_series(1, 20) c, generate_series(1, 10) r`
    yield* sql`INSERT INTO chunks SELECT 'run-' || c || '-' || r, s, '{}' FROM generate_series(1, 20) c, generate_series(1, 10) r, generate_series(1, 100) s`
    yield* sql`ANALYZE`
  })
onPostgres("StorePg indexes", () =>
  it.live("resume queries are index searches: no scan of items, chunks, runs or open_calls, no sort", () =>
    Effect.gen(function*() {
      const { url } = yield* freshSchema
      const { sql } = yield* openDatabase({ url })
      const q = pgQueries(sql)
      const cases = [
        ["pending approvals", q.openCallItems("conv-7"), ["open_calls_pkey", "items_position"]],
        ["backfill", q.renderTail("conv-7", 40), ["items_render"]],
        ["run by otid", q.runByOtid("conv-7", "otid-3"), ["runs_otid"]],
        ["chunks after a seq", q.chunksAfter("run-7-3", 10, 256), ["chunks_seq"]],
        ["model context", q.contextItems("conv-7", 2), ["items_context"]],
        ["segment export", q.traceBodies("conv-7", 1), ["items_trace"]],
        ["segment items", q.segmentItems("conv-7", 1), ["items_segment"]],
        ["current segment items", q.currentSegmentItems("conv-7"), ["conversations_pkey", "items_segment"]],
        ["items after", q.itemsAfter("conv-7", 500, 1001, 50), ["items_position"]],
        ["items after, from the conversation's row", q.itemsAfterFrom!("conv-7", 500, 1001, 50), ["conversations_pkey", "items_position"]],
        ["items before", q.itemsBefore("conv-7", 1001, 50), ["items_position"]],
        ["item by id", q.itemById("msg-7-10"), ["items_id"]],
        ["active run", q.activeRun("conv-7"), ["runs_running"]],
        ["run by otid or active", q.runByOtidOrActive("conv-7", "otid-3"), ["runs_otid", "runs_running"]],
        // no steering is held here: the planner may read either index
        ["held steering", q.heldSteering("conv-7"), []],
        // by id or by conversation: either index finds a handful of rows
        ["run seqs", q.runSeqs("conv-7", ["run-7-1", "run-7-2"]), []],
        ["conversation page", q.conversationsPage({ updatedAt: 15, touched: 15 }, 3), ["conversations_recent"]],
        ["top-level page", q.conversationsPage({ updatedAt: 15, touched: 15 }, 3, { roots: true }), ["conversations_recent"]],
        ["a Task call's child", q.childOf("conv-7", "t1"), ["conversations_parent"]]
      ] as const
      yield* populate(sql)
      yield* sql.withTransaction(Effect.gen(function*() {
        // Priced out, not forbidden: a plan keeps a scan or a sort only when no index can serve it.
        yield* sql`SET LOCAL enable_seqscan = off`
        yield* sql`SET LOCAL enable_sort = off`
        for (const [name, statement, indexes] of cases) {
          const [text, params] = statement.compile()
          const plan = yield* sql.unsafe<{ readonly "QUERY PLAN": string }>(`EXPLAIN ${text}`, params)
          const lines = plan.map((row) => row["QUERY PLAN"]).join(" | ")
          assert.notMatch(lines, /Seq Scan/, `${name}: ${lines}`)
          // Read from the conversation's row (one statement answers "no such conversation" too): the
          // open calls of a turn, or its held steering, are a few rows, sorted after the join.
          if (name !== "pending approvals" && name !== "held steering") assert.notMatch(lines, /\bSort\b/, `${name} sorts: ${lines}`)
          for (const index of indexes) assert.include(lines, ` ${index}`, `${name} uses ${index}: ${lines}`)
        }
      }))
    }).pipe(Effect.scoped)))
