import { Effect, Schema } from "effect"
import type { Conversation } from "../../../domain/Conversation.js"
import type { StoreError } from "../../../domain/Errors.js"
import { StopReasonValue } from "../../../domain/Events.js"
import { ConversationId, MessageId, Otid, RunId } from "../../../domain/Ids.js"
import { decodeEvent, decodeStoredSettings } from "../Codec.js"
import type { StoredItem } from "../../../domain/History.js"
import type { Run } from "../../../domain/Run.js"
import { corruptError } from "./Failures.js"

/** Rows as SQLite returns them, decoded at the boundary like any other outside input. */

const Flag = Schema.Literal(0, 1)

export const ItemRow = Schema.Struct({
  id: MessageId,
  conversation_id: ConversationId,
  position: Schema.Int,
  segment: Schema.Int,
  in_context: Flag,
  in_trace: Flag,
  body: Schema.String,
  created_at: Schema.Int
})

export const ConversationRow = Schema.Struct({
  id: ConversationId,
  title: Schema.NullOr(Schema.String),
  settings: Schema.String,
  created_at: Schema.Int,
  updated_at: Schema.Int,
  touched: Schema.Int
})
export type ConversationRow = typeof ConversationRow.Type

export const RunRow = Schema.Struct({
  id: RunId,
  conversation_id: ConversationId,
  otid: Otid,
  kind: Schema.Literal("turn", "compaction"),
  status: Schema.Literal("running", "completed", "failed", "cancelled"),
  stop_reason: Schema.NullOr(StopReasonValue),
  last_seq: Schema.NonNegativeInt,
  owner: Schema.NullOr(Schema.String),
  created_at: Schema.Int,
  updated_at: Schema.Int
})

export const ChunkRow = Schema.Struct({ seq: Schema.Int, body: Schema.String })

export const decodeRows = <A, I>(schema: Schema.Schema<A, I>, path: string) =>
(rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<A>, StoreError> =>
  Schema.decodeUnknown(Schema.Array(schema))(rows).pipe(
    Effect.mapError(() => corruptError(path, "holds a row Baton cannot read (damaged, or written by another program)"))
  )

export const toStoredItems = (path: string) => (rows: ReadonlyArray<unknown>) =>
  Effect.flatMap(decodeRows(ItemRow, path)(rows), (decoded) =>
    Effect.forEach(decoded, (row): Effect.Effect<StoredItem, StoreError> =>
      Effect.map(decodeEvent(row.body, path), (item) => ({
        id: row.id,
        conversationId: row.conversation_id,
        position: row.position,
        segment: row.segment,
        inContext: row.in_context === 1,
        inTrace: row.in_trace === 1,
        item,
        createdAt: row.created_at
      }))))

export const toConversation = (path: string) => (row: ConversationRow): Effect.Effect<Conversation, StoreError> =>
  Effect.map(decodeStoredSettings(row.settings, path), (settings) => ({
    id: row.id,
    ...(row.title === null ? {} : { title: row.title }),
    created_at: row.created_at,
    updated_at: row.updated_at,
    settings
  }))

export const toRuns = (path: string) => (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<Run>, StoreError> =>
  Effect.map(decodeRows(RunRow, path)(rows), (decoded) =>
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
