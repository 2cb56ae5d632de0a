import type { SqlClient } from "@effect/sql/SqlClient"
import type { RecencyKey } from "../../domain/ItemLog.js"

/**
 * The statements of a SQL store, one place for SQLite and PostgreSQL (the same tables and columns),
 * so the index tests can EXPLAIN exactly what runs. Where the two speak differently, the dialect
 * says it: SQLite's resume queries name their index (INDEXED BY), so SQLite fails the statement
 * rather than silently fall back to a scan if the index ever goes missing or stops matching.
 */
export interface SqlDialect {
  /** SQLite: `INDEXED BY <index>`; PostgreSQL has no such clause (its index test checks the plans). */
  readonly indexedBy: (index: string) => string
  /** The next value of the store-wide counter that orders conversations with equal updated_at. */
  readonly nextTouch: string
  /** Runs in the order they were created. */
  readonly runOrder: string
  /** Appended to a read of the conversation's row that must hold it until the transaction ends. */
  readonly lockRow: string
  /** A tool_return item's `tool_call_id`, read from its JSON body (the expression its index is on). */
  readonly toolCallIdOfBody: string
  /** A held steering message's `otid`, read from its JSON body. */
  readonly otidOfBody: string
  /** Has LATERAL joins (PostgreSQL; SQLite has none): a page of items can come with its conversation's row. */
  readonly lateral: boolean
}

const ITEM = "id, conversation_id, position, segment, in_context, in_trace, body, created_at"
const RUN = "id, conversation_id, otid, kind, status, stop_reason, last_seq, owner, created_at, updated_at"
const CONVERSATION = "id, title, settings, created_at, updated_at, touched, parent_id, parent_call, forked_from, forked_at"

export const makeQueries = (sql: SqlClient, dialect: SqlDialect) => {
  const item = sql.literal(ITEM)
  const run = sql.literal(RUN)
  const conversation = sql.literal(CONVERSATION)
  const joined = sql.literal(ITEM.split(", ").map((c) => `i.${c}`).join(", "))
  const by = (index: string) => sql.literal(dialect.indexedBy(index))
  const touch = sql.literal(dialect.nextTouch)
  return {
    // conversations primary key
    conversation: (id: string) => sql`SELECT ${conversation} FROM conversations WHERE id = ${id}`,
    conversationHead: (id: string) => sql`SELECT segment FROM conversations WHERE id = ${id}`,
    lockConversation: (id: string) =>
      sql<{ readonly id: string }>`SELECT id FROM conversations WHERE id = ${id}${sql.literal(dialect.lockRow)}`,
    // conversations_recent, walked newest first
    conversationsPage: (
      cursor: RecencyKey | undefined,
      limit: number,
      filter?: { readonly parent?: string; readonly roots?: boolean }
    ) => {
      const lineage = filter?.parent !== undefined
        ? sql` AND parent_id = ${filter.parent}`
        : filter?.roots === true
        ? sql` AND parent_id IS NULL`
        : sql``
      return cursor === undefined
        ? sql`SELECT ${conversation} FROM conversations WHERE 1 = 1${lineage} ORDER BY updated_at DESC, touched DESC LIMIT ${limit}`
        : sql`SELECT ${conversation} FROM conversations
              WHERE (updated_at, touched) < (${cursor.updatedAt}, ${cursor.touched})${lineage}
              ORDER BY updated_at DESC, touched DESC LIMIT ${limit}`
    },
    insertConversation: (row: {
      readonly id: string
      readonly title: string | null
      readonly settings: string
      readonly created_at: number
      readonly updated_at: number
      readonly parent_id: string | null
      readonly parent_call: string | null
      readonly forked_from: string | null
      readonly forked_at: number | null
    }) =>
      sql`INSERT INTO conversations (id, title, settings, created_at, updated_at, touched, parent_id, parent_call, forked_from, forked_at)
        VALUES (${row.id}, ${row.title}, ${row.settings}, ${row.created_at}, ${row.updated_at}, ${touch},
                ${row.parent_id}, ${row.parent_call}, ${row.forked_from}, ${row.forked_at})
        ON CONFLICT (parent_id, parent_call) WHERE parent_id IS NOT NULL DO NOTHING`,
    // conversations_parent: a Task call has at most one child conversation
    childOf: (parentId: string, toolCallId: string) =>
      sql`SELECT ${conversation} FROM conversations WHERE parent_id = ${parentId} AND parent_call = ${toolCallId}`,
    updateConversation: (id: string, now: number, settings: string | null, title: string | null) =>
      sql<{ readonly id: string }>`UPDATE conversations
        SET updated_at = ${now}, touched = ${touch},
            settings = coalesce(${settings}, settings), title = coalesce(${title}, title)
        WHERE id = ${id} RETURNING id`,
    /** The first statement of a commit: it writes, so the transaction holds the conversation from its start. */
    advanceHead: (id: string, now: number, items: number, newSegment: boolean) =>
      sql`UPDATE conversations
        SET updated_at = ${now}, touched = ${touch},
            last_position = last_position + ${items}, segment = segment + ${newSegment ? 1 : 0}
        WHERE id = ${id} RETURNING last_position, segment`,
    /** The first statement of a commit that records nothing (streamed chunks): it writes, and leaves recency as it was. */
    holdHead: (id: string) =>
      sql`UPDATE conversations SET last_position = last_position WHERE id = ${id} RETURNING last_position, segment`,

    // items_position
    itemsAfter: (id: string, after: number, before: number, limit: number) =>
      sql`SELECT ${item} FROM items WHERE conversation_id = ${id} AND position > ${after} AND position < ${before}
          ORDER BY position LIMIT ${limit}`,
    /**
     * itemsAfter read from the conversation's row (LATERAL), as openCallItems: no row at all means no
     * such conversation, one of NULLs no items. Rows come in no set order; the caller sorts the page.
     */
    itemsAfterFrom: dialect.lateral
      ? (id: string, after: number, before: number, limit: number) =>
        sql`SELECT ${joined} FROM conversations c LEFT JOIN LATERAL (
            SELECT ${item} FROM items WHERE conversation_id = c.id AND position > ${after} AND position < ${before}
            ORDER BY position LIMIT ${limit}
          ) i ON true WHERE c.id = ${id}`
      : undefined,
    itemsBefore: (id: string, before: number, limit: number) =>
      sql`SELECT ${item} FROM items WHERE conversation_id = ${id} AND position < ${before}
          ORDER BY position DESC LIMIT ${limit}`,
    // items_id
    itemById: (id: string) => sql`SELECT ${item} FROM items WHERE id = ${id}`,
    // items_context
    contextItems: (id: string, segment: number) =>
      sql`SELECT ${item} FROM items ${by("items_context")}
          WHERE conversation_id = ${id} AND segment = ${segment} AND in_context = 1
          ORDER BY position`,
    // items_segment
    segmentItems: (id: string, segment: number) =>
      sql`SELECT ${item} FROM items ${by("items_segment")}
          WHERE conversation_id = ${id} AND segment = ${segment} ORDER BY position`,
    // items_segment, from the conversation's row (its current segment): none means no such conversation
    currentSegmentItems: (id: string) =>
      sql`SELECT c.segment AS current_segment, ${joined} FROM conversations c
          LEFT JOIN items i ${by("items_segment")} ON i.conversation_id = c.id AND i.segment = c.segment
          WHERE c.id = ${id}`,
    // items_trace
    traceBodies: (id: string, segment: number) =>
      sql<{ readonly body: string }>`SELECT body FROM items ${by("items_trace")}
          WHERE conversation_id = ${id} AND segment = ${segment} AND in_trace = 1 ORDER BY position`,
    // open_calls primary key, then items_position per call
    // From the conversation's row: none at all means no such conversation, one of NULLs no open calls
    // (one statement either way; PostgreSQL sorts the few open calls of a turn after the join).
    openCallItems: (id: string) =>
      sql`SELECT ${joined}
          FROM conversations c LEFT JOIN open_calls o ON o.conversation_id = c.id
            LEFT JOIN items i ${by("items_position")} ON i.conversation_id = o.conversation_id AND i.position = o.position
          WHERE c.id = ${id} ORDER BY o.position`,
    // steering_conversation, from the conversation's row, as openCallItems
    heldSteering: (id: string) =>
      sql`SELECT s.id, s.body FROM conversations c LEFT JOIN steering s ON s.conversation_id = c.id
          WHERE c.id = ${id} ORDER BY s.id`,
    openCalls: (id: string) =>
      sql`SELECT position, tool_call_id FROM open_calls WHERE conversation_id = ${id} ORDER BY position`,
    openCallIds: (id: string, toolCallIds: ReadonlyArray<string>) =>
      sql`SELECT tool_call_id FROM open_calls WHERE conversation_id = ${id} AND tool_call_id IN ${sql.in(toolCallIds)}`,
    // items_tool_return: results are committed as their tools finish, so "has this call a result?" is one lookup
    toolReturns: (id: string, toolCallIds: ReadonlyArray<string>) =>
      sql`SELECT ${item} FROM items ${by("items_tool_return")}
          WHERE conversation_id = ${id} AND type = 'tool_return' AND ${sql.literal(dialect.toolCallIdOfBody)} IN ${sql.in(toolCallIds)}
          ORDER BY position`,
    // steering_conversation; a conversation holds a few at most, so the body is read for each
    dropSteering: (id: string, otids: ReadonlyArray<string>) =>
      sql`DELETE FROM steering WHERE conversation_id = ${id} AND ${sql.literal(dialect.otidOfBody)} IN ${sql.in(otids)}`,
    // items_render, walked backwards from the end
    renderTail: (id: string, cap: number) =>
      sql`SELECT ${item} FROM items ${by("items_render")}
          WHERE conversation_id = ${id} AND in_trace = 1 AND is_message = 1
          ORDER BY position DESC LIMIT ${cap}`,

    // runs primary key / runs_otid / runs_running
    runById: (id: string) => sql`SELECT ${run} FROM runs WHERE id = ${id}`,
    runByOtid: (id: string, otid: string) =>
      sql`SELECT ${run} FROM runs ${by("runs_otid")} WHERE conversation_id = ${id} AND otid = ${otid}`,
    activeRun: (id: string) =>
      sql`SELECT ${run} FROM runs ${by("runs_running")} WHERE conversation_id = ${id} AND status = 'running'`,
    /** runByOtid and activeRun in one statement (createRun's two checks): each half through its own index. */
    runByOtidOrActive: (id: string, otid: string) =>
      sql`SELECT ${run} FROM runs ${by("runs_otid")} WHERE conversation_id = ${id} AND otid = ${otid}
          UNION ALL
          SELECT ${run} FROM runs ${by("runs_running")} WHERE conversation_id = ${id} AND status = 'running'`,
    claimRun: (id: string, owner: string) => sql`UPDATE runs SET owner = ${owner} WHERE id = ${id} AND status = 'running'`,
    runningRuns: () => sql`SELECT ${run} FROM runs WHERE status = 'running' ORDER BY ${sql.literal(dialect.runOrder)}`,
    runSeqs: (id: string, runIds: ReadonlyArray<string>) =>
      sql`SELECT id, last_seq FROM runs WHERE conversation_id = ${id} AND id IN ${sql.in(runIds)}`,
    // chunks_seq
    chunksAfter: (runId: string, after: number, limit: number) =>
      sql`SELECT seq, body FROM chunks ${by("chunks_seq")} WHERE run_id = ${runId} AND seq > ${after} ORDER BY seq LIMIT ${limit}`
  } as const
}

export type Queries = ReturnType<typeof makeQueries>
