import { Context, type Effect, type Option, type Stream } from "effect"
import type { ItemQuery, ListConversationsOptions, Page, StoredItem, Write } from "../domain/History.js"
import type { Run, RunKind } from "../domain/Run.js"
import type { Conversation, ConversationSettings, ConversationSettingsInput, ForkLink, ParentLink } from "../domain/Conversation.js"
import type { ChunkSeqError, Conflict, InvalidInput, NotFound, StoreError, ToolCallAnswered } from "../domain/Errors.js"
import type { Chunk } from "../domain/Events.js"
import type { ConversationId, MessageId, Otid, RunId, ToolCallId } from "../domain/Ids.js"
import type { ToolCall, UserMessage } from "../domain/Messages.js"
import type { UsageRecord } from "../domain/Usage.js"

/**
 * Where a conversation lives. Every method answers resume questions (pending approvals, backfill,
 * run by otid, chunks after a seq) with index lookups, whatever the history length.
 * Implementations: StoreSqlite (default, a file), StorePg (a PostgreSQL database several processes
 * share), StoreMemory (tests); one contract suite for all.
 */
/**
 * How a conversation is made. With `parent`, creating is idempotent: the conversation that link
 * already names (a subagent re-attached after a crash) is returned instead of a second one.
 */
export interface CreateConversationOptions {
  readonly title?: string
  readonly parent?: ParentLink
  readonly forked_from?: ForkLink
}

/**
 * What a run records as it is created (a turn's input), in the same transaction: a repeated otid
 * or a busy conversation records nothing, and a run whose input cannot be recorded is not created.
 */
export type RunInput = Pick<Write, "items" | "expectOpen" | "takesSteering">

export class Store extends Context.Tag("baton/Store")<Store, {
  readonly createConversation: (
    settings: ConversationSettingsInput,
    options?: CreateConversationOptions
  ) => Effect.Effect<Conversation, StoreError>
  readonly getConversation: (id: ConversationId) => Effect.Effect<Conversation, NotFound | StoreError>
  /** Newest (most recently updated: created, updated, or something recorded in it) first; a bad cursor is InvalidInput. */
  readonly listConversations: (options?: ListConversationsOptions) => Effect.Effect<Page<Conversation>, InvalidInput | StoreError>
  readonly updateConversation: (
    id: ConversationId,
    patch: { readonly settings?: ConversationSettings; readonly title?: string }
  ) => Effect.Effect<Conversation, NotFound | StoreError>
  readonly deleteConversation: (id: ConversationId) => Effect.Effect<void, NotFound | StoreError>

  /** One atomic write; streamed chunks alone (no items, no finished run) leave the conversation's recency as it was. */
  readonly commit: (write: Write) => Effect.Effect<ReadonlyArray<StoredItem>, NotFound | ChunkSeqError | ToolCallAnswered | StoreError>
  /** Recorded items (messages and events) in chronological order. */
  readonly listItems: (id: ConversationId, query?: ItemQuery) => Effect.Effect<ReadonlyArray<StoredItem>, NotFound | StoreError>
  readonly getItem: (id: MessageId) => Effect.Effect<StoredItem, NotFound | StoreError>
  /** What the model sees next: the current segment's in-context items, in order. */
  readonly modelContext: (id: ConversationId) => Effect.Effect<ReadonlyArray<StoredItem>, NotFound | StoreError>
  readonly currentSegment: (id: ConversationId) => Effect.Effect<number, NotFound | StoreError>
  /** The current segment and all its items, in order: `currentSegment` and `segmentItems` in one read. */
  readonly currentSegmentItems: (
    id: ConversationId
  ) => Effect.Effect<{ readonly segment: number; readonly items: ReadonlyArray<StoredItem> }, NotFound | StoreError>
  /** Every item (context and trace) of one segment, in order: what compaction planning reads. */
  readonly segmentItems: (id: ConversationId, segment: number) => Effect.Effect<ReadonlyArray<StoredItem>, NotFound | StoreError>
  /**
   * One segment of the trace as JSONL (`trace_001.jsonl`): each in-trace item's JSON exactly as
   * stored, one per line, each line ending in `\n`; "" for a segment with no items.
   */
  readonly exportSegment: (id: ConversationId, segment: number) => Effect.Effect<string, NotFound | StoreError>
  /**
   * Every tool_return with one of these tool_call_ids, in any segment, with any flags (the results
   * committed as they finished, held ones included), in order: an index lookup.
   */
  readonly toolReturns: (id: ConversationId, toolCallIds: ReadonlyArray<ToolCallId>) => Effect.Effect<ReadonlyArray<StoredItem>, NotFound | StoreError>
  /** Tool calls of the current context without a tool_return, in call order. */
  readonly pendingApprovals: (id: ConversationId) => Effect.Effect<ReadonlyArray<ToolCall>, NotFound | StoreError>
  /**
   * What to show on resume, from the whole trace (across segments): its messages, walking back to
   * `primary` user/assistant/reasoning/summary messages
   * (default 10), at most `cap` items (default 40), never starting with an orphan tool_return.
   */
  readonly backfill: (
    id: ConversationId,
    options?: { readonly primary?: number; readonly cap?: number }
  ) => Effect.Effect<ReadonlyArray<StoredItem>, NotFound | StoreError>

  /**
   * Creates a run for this otid, or returns the one it already started (`created: false`).
   * A conversation has at most one running run: another one fails with Conflict, also across
   * processes sharing the store (the file, or the database). `input`, given the new run, says what
   * it records with it (one transaction: a send costs one commit, not three checks and two commits).
   */
  readonly createRun: (
    id: ConversationId,
    otid: Otid,
    kind: RunKind,
    options?: { readonly owner?: string; readonly input?: (run: Run) => RunInput }
  ) => Effect.Effect<{ readonly run: Run; readonly created: boolean }, NotFound | StoreError | Conflict | ToolCallAnswered>
  readonly getRun: (id: RunId) => Effect.Effect<Run, NotFound | StoreError>
  readonly runByOtid: (id: ConversationId, otid: Otid) => Effect.Effect<Option.Option<Run>, StoreError>
  readonly activeRun: (id: ConversationId) => Effect.Effect<Option.Option<Run>, StoreError>
  /** Records a new owner of a run still `running` (a cluster runner that took it over); a finished run is left as it is. */
  readonly claimRun: (id: RunId, owner: string) => Effect.Effect<void, StoreError>
  /** Runs still `running` in any conversation (left by a process that died). */
  readonly runningRuns: Effect.Effect<ReadonlyArray<Run>, StoreError>
  /** Chunks with seq > after, in order; the stream ends at the last committed chunk. */
  readonly readChunks: (runId: RunId, after: number) => Stream.Stream<Chunk, NotFound | StoreError>

  /** Holds a steering message for the conversation's next input assembly (Backend.steer). */
  readonly queueSteering: (id: ConversationId, message: UserMessage) => Effect.Effect<void, NotFound | StoreError>
  /** The conversation's queued steering messages, oldest first, left queued (a commit's `takesSteering` takes them). */
  readonly heldSteering: (id: ConversationId) => Effect.Effect<ReadonlyArray<UserMessage>, NotFound | StoreError>
  /** Removes and returns the conversation's queued steering messages, oldest first. */
  readonly takeSteering: (id: ConversationId) => Effect.Effect<ReadonlyArray<UserMessage>, NotFound | StoreError>
  /** Records one model request's usage. */
  readonly recordUsage: (record: UsageRecord) => Effect.Effect<void, StoreError>
  /** Usage records, oldest first: of one conversation, and since a time (ms), when given. */
  readonly usage: (query?: { readonly conversationId?: ConversationId; readonly since?: number }) => Effect.Effect<ReadonlyArray<UsageRecord>, StoreError>
}>() {}
