import type { TaskEvent } from "./Events.js"
import type { ConversationId, MessageId } from "./Ids.js"

/**
 * One recorded item of a conversation: a message or an event (never a delta).
 * `inContext`: the model sees it (messages of the current segment, carry-over, summaries).
 * `inTrace`: the trace shows it (everything that really happened; not carry-over).
 */
export interface StoredItem {
  readonly id: MessageId
  readonly conversationId: ConversationId
  /** Per-conversation, strictly increasing, contiguous from 1. */
  readonly position: number
  /** Trace segment: 1, then +1 at each successful compaction. */
  readonly segment: number
  readonly inContext: boolean
  readonly inTrace: boolean
  readonly item: TaskEvent
  readonly createdAt: number
}

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  /** Pass as `before` to get the next (older) page; absent on the last page. */
  readonly next?: string
}

/**
 * Chronological cursors: `before` always means older, `after` always newer (positions). With `after`
 * the page is the oldest `limit` items after it (up to `before`); otherwise the newest `limit` items
 * before `before` (or of all). Pages are always in chronological order; limit 100 by default, max 1000.
 */
export interface ItemQuery {
  readonly before?: number
  readonly after?: number
  readonly limit?: number
}
