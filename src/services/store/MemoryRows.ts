import { Effect, Option } from "effect"
import { InvalidInput } from "../../domain/Errors.js"
import type { Conversation } from "../../domain/Conversation.js"
import type { TaskEventType } from "../../domain/Events.js"
import type { StoredItem } from "../../domain/History.js"
import type { ConversationId, MessageId } from "../../domain/Ids.js"
import { clampLimit, compareRecencyDesc, decodeCursor, encodeCursor, isOlder, type OpenCall } from "../../domain/ItemLog.js"
import type { Store } from "../Store.js"
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

/** A page of conversations, most recent first, after the cursor `before`, as Store.listConversations answers. */
export const conversationsPage = (states: ReadonlyArray<ConversationState>, options: Parameters<Store["Type"]["listConversations"]>[0]) => {
  const limit = clampLimit(options?.limit, 50, 500)
  const cursor = options?.before === undefined ? Option.none() : decodeCursor(options.before)
  if (options?.before !== undefined && Option.isNone(cursor)) {
    return Effect.fail(new InvalidInput({ message: `Not a conversation list cursor: ${options.before}` }))
  }
  const keyed = states
    .map((s) => ({ s, key: { updatedAt: s.conversation.updated_at, touched: s.touched } }))
    .filter(({ key }) => Option.isNone(cursor) || isOlder(key, cursor.value))
    .filter(({ s }) => options?.parent === undefined || s.conversation.parent?.conversation_id === options.parent)
    .filter(({ s }) => options?.roots !== true || s.conversation.parent === undefined)
    .sort((a, b) => compareRecencyDesc(a.key, b.key))
  const page = keyed.slice(0, limit)
  const last = page[page.length - 1]
  return Effect.succeed({
    items: page.map(({ s }) => s.conversation),
    ...(keyed.length > limit && last !== undefined ? { next: encodeCursor(last.key) } : {})
  })
}
