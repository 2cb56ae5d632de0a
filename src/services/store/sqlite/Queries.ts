import type { SqlClient } from "@effect/sql/SqlClient"
import type { RecencyKey } from "../../../domain/ItemLog.js"

/**
 * The store's read statements, one place, so the index test can EXPLAIN exactly what runs.
 * The resume-path queries name their index (INDEXED BY): SQLite then fails the statement rather than
 * silently fall back to a scan if the index ever goes missing or stops matching.
 */

const ITEM = "id, conversation_id, position, segment, in_context, in_trace, body, created_at"
const RUN = "id, conversation_id, otid, kind, status, stop_reason, last_seq, owner, created_at, updated_at"
const CONVERSATION = "id, title, settings, created_at, updated_at, touched"

export const makeQueries = (sql: SqlClient) => {
  const item = sql.literal(ITEM)
  const run = sql.literal(RUN)
  const conversation = sql.literal(CONVERSATION)
  return {
    // conversations primary key
    conversation: (id: string) => sql`SELECT ${conversation} FROM conversations WHERE id = ${id}`,
    conversationHead: (id: string) => sql<{ readonly segment: number }>`SELECT segment FROM conversations WHERE id = ${id}`,
    // conversations_recent, walked newest first
    conversationsPage: (cursor: RecencyKey | undefined, limit: number) =>
      cursor === undefined
        ? sql`SELECT ${conversation} FROM conversations ORDER BY updated_at DESC, touched DESC LIMIT ${limit}`
        : sql`SELECT ${conversation} FROM conversations
              WHERE (updated_at, touched) < (${cursor.updatedAt}, ${cursor.touched})
              ORDER BY updated_at DESC, touched DESC LIMIT ${limit}`,

    // items_position
    itemsAfter: (id: string, after: number, before: number, limit: number) =>
      sql`SELECT ${item} FROM items WHERE conversation_id = ${id} AND position > ${after} AND position < ${before}
          ORDER BY position LIMIT ${limit}`,
    itemsBefore: (id: string, before: number, limit: number) =>
      sql`SELECT ${item} FROM items WHERE conversation_id = ${id} AND position < ${before}
          ORDER BY position DESC LIMIT ${limit}`,
    // items_id
    itemById: (id: string) => sql`SELECT ${item} FROM items WHERE id = ${id}`,
    // items_context
    contextItems: (id: string, segment: number) =>
      sql`SELECT ${item} FROM items INDEXED BY items_context
          WHERE conversation_id = ${id} AND segment = ${segment} AND in_context = 1
          ORDER BY position`,
    // items_segment
    segmentItems: (id: string, segment: number) =>
      sql`SELECT ${item} FROM items INDEXED BY items_segment
          WHERE conversation_id = ${id} AND segment = ${segment} ORDER BY position`,
    // items_trace
    traceBodies: (id: string, segment: number) =>
      sql<{ readonly body: string }>`SELECT body FROM items INDEXED BY items_trace
          WHERE conversation_id = ${id} AND segment = ${segment} AND in_trace = 1 ORDER BY position`,
    // open_calls primary key, then items_position per call
    openCallItems: (id: string) =>
      sql`SELECT ${sql.literal(ITEM.split(", ").map((c) => `i.${c}`).join(", "))}
          FROM open_calls o JOIN items i INDEXED BY items_position ON i.conversation_id = o.conversation_id AND i.position = o.position
          WHERE o.conversation_id = ${id} ORDER BY o.position`,
    openCalls: (id: string) =>
      sql<{ readonly position: number; readonly tool_call_id: string }>`SELECT position, tool_call_id
          FROM open_calls WHERE conversation_id = ${id} ORDER BY position`,
    // items_tool_return
    toolReturns: (id: string, toolCallIds: ReadonlyArray<string>) =>
      sql`SELECT ${item} FROM items INDEXED BY items_tool_return
          WHERE conversation_id = ${id} AND type = 'tool_return' AND json_extract(body, '$.tool_call_id') IN ${sql.in(toolCallIds)}
          ORDER BY position`,
    openCallIds: (id: string, toolCallIds: ReadonlyArray<string>) =>
      sql<{ readonly tool_call_id: string }>`SELECT tool_call_id FROM open_calls
          WHERE conversation_id = ${id} AND tool_call_id IN ${sql.in(toolCallIds)}`,
    // items_render, walked backwards from the end
    renderTail: (id: string, cap: number) =>
      sql`SELECT ${item} FROM items INDEXED BY items_render
          WHERE conversation_id = ${id} AND in_trace = 1 AND is_message = 1
          ORDER BY position DESC LIMIT ${cap}`,

    // runs primary key / runs_otid / runs_running
    runById: (id: string) => sql`SELECT ${run} FROM runs WHERE id = ${id}`,
    runByOtid: (id: string, otid: string) =>
      sql`SELECT ${run} FROM runs INDEXED BY runs_otid WHERE conversation_id = ${id} AND otid = ${otid}`,
    activeRun: (id: string) =>
      sql`SELECT ${run} FROM runs INDEXED BY runs_running WHERE conversation_id = ${id} AND status = 'running'`,
    runningRuns: () => sql`SELECT ${run} FROM runs WHERE status = 'running' ORDER BY created_at, rowid`,
    runSeqs: (id: string, runIds: ReadonlyArray<string>) =>
      sql<{ readonly id: string; readonly last_seq: number }>`SELECT id, last_seq FROM runs
          WHERE conversation_id = ${id} AND id IN ${sql.in(runIds)}`,
    // chunks_seq
    chunksAfter: (runId: string, after: number, limit: number) =>
      sql`SELECT seq, body FROM chunks INDEXED BY chunks_seq WHERE run_id = ${runId} AND seq > ${after} ORDER BY seq LIMIT ${limit}`
  } as const
}

export type Queries = ReturnType<typeof makeQueries>
