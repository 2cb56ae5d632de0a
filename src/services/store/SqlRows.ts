import { Effect, Either, Schema } from "effect"
import type { Conversation } from "../../domain/Conversation.js"
import type { StoreError } from "../../domain/Errors.js"
import { StopReasonValue } from "../../domain/Events.js"
import type { StoredItem } from "../../domain/History.js"
import { ConversationId, MessageId, Otid, RunId, ToolCallId } from "../../domain/Ids.js"
import type { Run } from "../../domain/Run.js"
import { decodeItemBody, decodeStoredSettings } from "./Codec.js"

/**
 * Rows as a SQL store returns them (SQLite or PostgreSQL: the same columns), decoded at the
 * boundary like any other outside input, then turned into the port's values.
 */

/** Where rows come from: named in errors (a file, or a database URL without its password). */
export interface RowSource {
  readonly label: string
  /** A row that does not decode: the store is damaged or was written by another program. */
  readonly corrupt: (what: string) => StoreError
}

/** SQLite returns integers as numbers; PostgreSQL returns a BIGINT as its decimal text. */
const Integer = Schema.Union(Schema.Int, Schema.compose(Schema.NumberFromString, Schema.Int))

const Flag = Schema.Literal(0, 1)

export const ItemRow = Schema.Struct({
  id: MessageId,
  conversation_id: ConversationId,
  position: Integer,
  segment: Integer,
  in_context: Flag,
  in_trace: Flag,
  body: Schema.String,
  created_at: Integer
})

export const ConversationRow = Schema.Struct({
  id: ConversationId,
  title: Schema.NullOr(Schema.String),
  settings: Schema.String,
  created_at: Integer,
  updated_at: Integer,
  touched: Integer,
  parent_id: Schema.NullOr(ConversationId),
  parent_call: Schema.NullOr(ToolCallId),
  forked_from: Schema.NullOr(ConversationId),
  forked_at: Schema.NullOr(Integer)
})
export type ConversationRow = typeof ConversationRow.Type

export const RunRow = Schema.Struct({
  id: RunId,
  conversation_id: ConversationId,
  otid: Otid,
  kind: Schema.Literal("turn", "compaction"),
  status: Schema.Literal("running", "completed", "failed", "cancelled"),
  stop_reason: Schema.NullOr(StopReasonValue),
  last_seq: Integer.pipe(Schema.nonNegative()),
  owner: Schema.NullOr(Schema.String),
  created_at: Integer,
  updated_at: Integer
})

export const ChunkRow = Schema.Struct({ seq: Integer, body: Schema.String })

export const OpenCallRow = Schema.Struct({ position: Integer, tool_call_id: Schema.String })
export const ToolCallIdRow = Schema.Struct({ tool_call_id: Schema.String })

export const HeadRow = Schema.Struct({ last_position: Integer, segment: Integer })

export const SegmentRow = Schema.Struct({ segment: Integer })

export const RunSeqRow = Schema.Struct({ id: Schema.String, last_seq: Integer })

// One decoder per row schema: a schema built per call (Schema.Array(row)) is a new AST each time,
// which the parser cache cannot recognise, so every read would compile its parser again.
const arrayDecoders = new WeakMap<object, (rows: unknown) => Effect.Effect<ReadonlyArray<unknown>, unknown>>()

const arrayDecoder = <A, I>(schema: Schema.Schema<A, I>) => {
  let decode = arrayDecoders.get(schema)
  if (decode === undefined) {
    decode = Schema.decodeUnknown(Schema.Array(schema))
    arrayDecoders.set(schema, decode)
  }
  return decode as (rows: unknown) => Effect.Effect<ReadonlyArray<A>, unknown>
}

export const decodeRows = <A, I>(schema: Schema.Schema<A, I>, source: RowSource) =>
(rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<A>, StoreError> =>
  arrayDecoder(schema)(rows).pipe(
    Effect.mapError(() => source.corrupt("holds a row Baton cannot read (damaged, or written by another program)"))
  )

/** Rows → stored items in one step (a loop, not an effect per row). */
export const toStoredItems = (source: RowSource) => (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<StoredItem>, StoreError> =>
  Effect.flatMap(decodeRows(ItemRow, source)(rows), (decoded) => {
    const out: Array<StoredItem> = []
    for (const row of decoded) {
      const item = decodeItemBody(row.body, source.label)
      if (Either.isLeft(item)) return Effect.fail(item.left)
      out.push({
        id: row.id,
        conversationId: row.conversation_id,
        position: row.position,
        segment: row.segment,
        inContext: row.in_context === 1,
        inTrace: row.in_trace === 1,
        item: item.right,
        createdAt: row.created_at
      })
    }
    return Effect.succeed(out)
  })

export const toConversation = (source: RowSource) => (row: ConversationRow): Effect.Effect<Conversation, StoreError> =>
  Effect.map(decodeStoredSettings(row.settings, source.label), (settings) => ({
    id: row.id,
    ...(row.title === null ? {} : { title: row.title }),
    created_at: row.created_at,
    updated_at: row.updated_at,
    settings,
    ...(row.parent_id !== null && row.parent_call !== null
      ? { parent: { conversation_id: row.parent_id, tool_call_id: row.parent_call } }
      : {}),
    ...(row.forked_from !== null && row.forked_at !== null ? { forked_from: { conversation_id: row.forked_from, at: row.forked_at } } : {})
  }))

export const toRuns = (source: RowSource) => (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<Run>, StoreError> =>
  Effect.map(decodeRows(RunRow, source)(rows), (decoded) =>
    decoded.map((r): Run => ({
      id: r.id,
      conversationId: r.conversation_id,
      otid: r.otid,
      kind: r.kind,
      status: r.status,
      stopReason: r.stop_reason ?? undefined,
      lastSeq: r.last_seq,
      owner: r.owner ?? undefined,
      createdAt: r.created_at,
      updatedAt: r.updated_at
    })))
