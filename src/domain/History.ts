import type { Chunk, StopReasonValue, TaskEvent } from "./Events.js"
import type { ConversationId, MessageId, Otid, RunId, ToolCallId } from "./Ids.js"
import type { RunStatus } from "./Run.js"
import type { UsageRecord } from "./Usage.js"

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

/** A page of conversations, newest first: all of them, only top-level ones, or one conversation's subagents. */
export interface ListConversationsOptions {
  readonly limit?: number
  readonly before?: string
  /** Only the subagent conversations this conversation's Task calls started. */
  readonly parent?: ConversationId
  /** Only conversations that are nobody's subagent. */
  readonly roots?: boolean
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

/** A delta as an item is a caller bug: `commit` dies before writing anything. */
export interface NewItem {
  readonly item: TaskEvent
  /** Model context only (carry-over, the `[context_summary]` message): never shown as a real event. */
  readonly contextOnly?: boolean
  /** Trace only: output that was shown but never reached the model context (a failed or cancelled request). */
  readonly traceOnly?: boolean
}

/**
 * One logical write, committed in one transaction: all of it or none of it.
 * Items are appended in order; chunks must continue their run's seq exactly.
 */
export interface Write {
  readonly conversationId: ConversationId
  readonly items?: ReadonlyArray<NewItem>
  readonly chunks?: ReadonlyArray<Chunk>
  /** Finish the run in the same transaction (e.g. with its stop_reason chunk). */
  readonly finishRun?: {
    readonly runId: RunId
    readonly status: Exclude<RunStatus, "running">
    readonly stopReason: StopReasonValue
  }
  /** Start a new trace segment before appending `items` (a successful compaction). */
  readonly newSegment?: boolean
  /**
   * Calls these items answer: each must still be an open call when the write commits, or the
   * write fails with ToolCallAnswered and nothing is written (two writers answering one call).
   */
  readonly expectOpen?: ReadonlyArray<ToolCallId>
  /**
   * Held steering (by otid) these items record: taken off the conversation's queue in the same
   * transaction, so a crash can neither lose it (taken, not yet recorded) nor send it twice.
   */
  readonly takesSteering?: ReadonlyArray<Otid>
  /** Model requests' usage, recorded with this write (a run's request_end) instead of in a write of its own. */
  readonly usage?: ReadonlyArray<UsageRecord>
}

/**
 * Whether a write records something (items, a finished run, a new segment), which makes its
 * conversation the most recently active; a run's streamed chunks alone do not (its request_begin did).
 */
export const records = (write: Write): boolean =>
  (write.items ?? []).length > 0 || write.finishRun !== undefined || write.newSegment === true
