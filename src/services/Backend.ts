import { Context, type Effect, type Stream } from "effect"
import type { Conversation, ConversationSettings, ConversationSettingsInput, ParentLink } from "../domain/Conversation.js"
import type { BackendError, NotFound, StoreError } from "../domain/Errors.js"
import type { CarryOver } from "../domain/CarryOver.js"
import type { Compactability } from "../domain/Compaction.js"
import type { ApprovalDecision, Chunk, CompactionReason } from "../domain/Events.js"
import type { ListConversationsOptions, Page, StoredItem } from "../domain/History.js"
import type { ConversationId, RunId } from "../domain/Ids.js"
import type { ToolCall, ToolReturn, UserMessage } from "../domain/Messages.js"
import type { RunInfo, SendInput } from "../domain/Run.js"
import type { Pricing, UsageReport } from "../domain/Usage.js"

/**
 * src/services/ holds the ports at its top — Backend (this module), Provider, Store, ToolExecutor,
 * McpClients — plus the few helpers their adapters share (Sse, RealClock, ProcessIdentity, and
 * ProcessGroup and ProcessRegistry for the process groups Baton starts), and one folder of adapters
 * per port: provider/, store/, backend/ (the remote client), tools/, mcp/. An adapter reaches
 * another family only through these top-level modules; nothing here imports src/programs.
 */

export interface UsageQuery {
  readonly conversationId?: ConversationId
  readonly since?: number
  readonly pricing?: Pricing
}

/**
 * Where conversation state and model calls live. `BackendLocal.layerLocal` (programs/backend) runs
 * conversation actors in process over Store + Provider; `BackendRemote.layerRemote` (services/backend)
 * is an HTTP client of `baton serve`. One contract suite
 * (test/support/backendContract.ts) runs against both, so the Session cannot tell them apart.
 */
export class Backend extends Context.Tag("baton/Backend")<Backend, {
  /**
   * With `parent` (a subagent's conversation) creating is idempotent: the conversation that Task call
   * already has is returned, so a parent resumed after a crash re-attaches to it.
   */
  readonly createConversation: (
    settings: ConversationSettingsInput,
    options?: { readonly title?: string; readonly parent?: ParentLink }
  ) => Effect.Effect<Conversation, BackendError>
  readonly getConversation: (id: ConversationId) => Effect.Effect<Conversation, BackendError>
  /** Newest first; `roots` leaves subagents out, `parent` lists one conversation's subagents. */
  readonly listConversations: (options?: ListConversationsOptions) => Effect.Effect<Page<Conversation>, BackendError>
  readonly updateConversation: (
    id: ConversationId,
    patch: { readonly settings?: ConversationSettings; readonly title?: string }
  ) => Effect.Effect<Conversation, BackendError>
  /**
   * Starts a run for `input` and streams its chunks until its stop_reason. Fails with Conflict while
   * another run or a compaction is active, ApprovalPending for user text while calls wait for results,
   * InvalidToolCallIds when results do not answer exactly the pending calls that have no committed
   * result (results committed already, by `submitResult`, may be sent again or left out). An otid already used in
   * this conversation starts nothing: the stream of the run it started is returned instead.
   * The run belongs to the backend: a reader that stops does not stop it.
   */
  readonly send: (id: ConversationId, input: SendInput) => Stream.Stream<Chunk, BackendError>
  /** The run's record: status, stop reason, the process (or cluster runner) that owns it. */
  readonly getRun: (runId: RunId) => Effect.Effect<RunInfo, BackendError>
  /** Chunks with seq > after (from the store), then the live tail, ending with the stop_reason. */
  readonly streamRun: (runId: RunId, options?: { readonly after?: number }) => Stream.Stream<Chunk, BackendError>
  /**
   * Interrupts the active run (it ends `cancelled`) and, once it has ended, records the carry-over.
   * Safe when nothing runs: then it only records the carry-over. Pending calls not answered by the
   * carry-over are closed as interrupted, so nothing stays pending after an interrupt.
   */
  readonly cancel: (id: ConversationId, carryOver?: CarryOver) => Effect.Effect<void, BackendError>
  /**
   * Commits one tool result the moment its tool finished, so a crash never loses it and it is never
   * run again: the call leaves `pendingApprovals` at once. Accepted for a pending call, and for a call
   * the active run has streamed but not yet committed (held until its run commits the call). The same
   * result again (its otid) is a no-op; another result for an answered call is ToolCallAnswered; a
   * call the conversation does not know is InvalidToolCallIds. `decision` is recorded with it (trace).
   * Sending the results again with the next input is still allowed (they are recognised by otid).
   */
  readonly submitResult: (
    id: ConversationId,
    result: ToolReturn,
    options?: { readonly decision?: ApprovalDecision }
  ) => Effect.Effect<void, BackendError>
  /** Tool calls of the current context still waiting for a result (none committed yet), in call order. */
  readonly pendingApprovals: (id: ConversationId) => Effect.Effect<ReadonlyArray<ToolCall>, BackendError>
  /** Recorded messages and events, chronological; `before` means older, `after` newer. */
  readonly history: (
    id: ConversationId,
    cursor?: { readonly before?: number; readonly after?: number; readonly limit?: number }
  ) => Effect.Effect<ReadonlyArray<StoredItem>, BackendError>
  /** The last few renderable messages, for a resumed screen. */
  readonly backfill: (id: ConversationId) => Effect.Effect<ReadonlyArray<StoredItem>, BackendError>
  /** Ends the current reconnect wait now; the retry count is unchanged. */
  readonly skipReconnectWait: (id: ConversationId) => Effect.Effect<void, BackendError>
  /** Runs a compaction as the conversation's one active job, streaming its chunks. */
  readonly compact: (id: ConversationId, reason: CompactionReason) => Stream.Stream<Chunk, BackendError>
  readonly compactability: (id: ConversationId) => Effect.Effect<Compactability, BackendError>
  /** A one-shot model call (no tools, no system prompt, not in history) stored as the title. */
  readonly generateTitle: (id: ConversationId) => Effect.Effect<string, BackendError>
  /**
   * A new conversation (`forked_from`) whose model context is a copy of this one's up to the item at
   * position `at` (default: the last), with the same settings and a trace of its own. A cut that
   * leaves a tool call without its result is InvalidInput; the source is never changed.
   */
  readonly fork: (id: ConversationId, options?: { readonly at?: number }) => Effect.Effect<Conversation, BackendError>
  /**
   * Steering held by the backend, persisted: queued as a `[user_steering]` user text, drained into
   * the very next model request the backend assembles (also the one right after a mid-run
   * compaction), from whichever client sent it. Only while a task runs (domain/TaskActivity): an
   * idle conversation refuses it with NoTaskRunning, and the text belongs in a prompt instead.
   */
  readonly steer: (id: ConversationId, text: string) => Effect.Effect<void, BackendError>
  /**
   * The steering no request has taken yet, left held: a task that ends continues with it as its next
   * input, whose send takes it off the queue in the same transaction as it records it.
   */
  readonly heldSteering: (id: ConversationId) => Effect.Effect<ReadonlyArray<UserMessage>, BackendError>
  /** Removes and returns the steering no request has taken yet (a task that ends drops it). */
  readonly takeSteering: (id: ConversationId) => Effect.Effect<ReadonlyArray<UserMessage>, BackendError>
  /**
   * Usage accounting: every model request's token usage (turns, compactions, titles, failed
   * attempts), totalled overall and per conversation and model, since `since` (ms). Cost comes from
   * `pricing`; over HTTP the server's own pricing table applies.
   */
  readonly usage: (query?: UsageQuery) => Effect.Effect<UsageReport, BackendError>
  /** One trace segment as JSONL. */
  readonly exportTrace: (id: ConversationId, segment: number) => Effect.Effect<string, NotFound | StoreError | BackendError>
}>() {}
