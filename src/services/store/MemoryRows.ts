import { Effect } from "effect"
import type { Conversation } from "../../domain/Conversation.js"
import type { TaskEventType } from "../../domain/Events.js"
import type { StoredItem } from "../../domain/History.js"
import type { ConversationId, MessageId } from "../../domain/Ids.js"
import type { OpenCall } from "../../domain/ItemLog.js"
import { decodeEvent } from "./Codec.js"

/** One item as the in-memory store keeps it: the exact JSON text the SQLite layer would store. */
export interface Row {
  readonly id: MessageId
  readonly position: number
  readonly segment: number
  readonly inContext: boolean
  readonly inTrace: boolean
  readonly type: TaskEventType
  readonly body: string
  readonly createdAt: number
}

export interface ConversationState {
  conversation: Conversation
  touched: number
  segment: number
  readonly rows: Array<Row>
  open: ReadonlyArray<OpenCall>
}

/** Decodes a row on every read, as SQLite does, so both layers return identical values. */
export const toStored = (conversationId: ConversationId, row: Row): Effect.Effect<StoredItem, never> =>
  decodeEvent(row.body, undefined).pipe(
    Effect.orDie,
    Effect.map((item) => ({
      id: row.id,
      conversationId,
      position: row.position,
      segment: row.segment,
      inContext: row.inContext,
      inTrace: row.inTrace,
      item,
      createdAt: row.createdAt
    }))
  )

export const storedAll = (conversationId: ConversationId, rows: ReadonlyArray<Row>) =>
  Effect.forEach(rows, (row) => toStored(conversationId, row))
