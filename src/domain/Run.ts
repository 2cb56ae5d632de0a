import { Schema } from "effect"
import { type ApprovalDecision, StopReasonValue } from "./Events.js"
import { ConversationId, type Otid, RunId } from "./Ids.js"
import type { InputMessage } from "./Messages.js"
import type { ThinkingLevel } from "./ProviderEvent.js"

/** A run's lifecycle. `running` left behind by a dead process is closed at start-up. */
export type RunStatus = "running" | "completed" | "failed" | "cancelled"
export type RunKind = "turn" | "compaction"

/** The record of one run: one model request plus its reconnects (or one compaction). */
export interface Run {
  readonly id: RunId
  readonly conversationId: ConversationId
  readonly otid: Otid
  readonly kind: RunKind
  readonly status: RunStatus
  readonly stopReason: StopReasonValue | undefined
  /** The highest seq committed for this run (0 before the first chunk). */
  readonly lastSeq: number
  /** The process that runs it (`host:pid:start`), so start-up closes only runs whose process is gone. */
  readonly owner: string | undefined
  readonly createdAt: number
  readonly updatedAt: number
}

/** What a client sends to start a run: only the new messages, never the history. */
export interface SendInput {
  /** New user text and/or the results of every pending tool call, each with its own otid. */
  readonly messages: ReadonlyArray<InputMessage>
  /** Client-side facts for the trace (approval decisions), recorded before the messages. */
  readonly events?: ReadonlyArray<ApprovalDecision>
  /** Thinking level for this run, kept across its reconnects. */
  readonly thinking?: ThinkingLevel
  /**
   * With no messages: re-runs the conversation on its context as it stands (this otid names the
   * run), allowed only right after a turn that stopped `auth` or `error` — a retry never sends the
   * prompt again.
   */
  readonly retry?: Otid
  /** Reconnects the task spent in its earlier runs: one budget per user turn (the recovery policy's `reconnectReset`). */
  readonly reconnects_spent?: number
}

/** The activity a conversation's one job is busy with, as a Conflict reports it. */
export const activityOf = (kind: RunKind): "run" | "compaction" => (kind === "compaction" ? "compaction" : "run")

/**
 * A run as `Backend.getRun` (GET /v1/runs/:id) shows it: its status, its stop reason once it has one,
 * and its owner — the process running it (`host:pid:start`), or on a cluster the runner (`host:port`)
 * whose shard holds its conversation; a takeover records the new one.
 */
export const RunInfo = Schema.Struct({
  id: RunId,
  conversation_id: ConversationId,
  kind: Schema.Literal("turn", "compaction"),
  status: Schema.Literal("running", "completed", "failed", "cancelled"),
  stop_reason: Schema.optionalWith(StopReasonValue, { exact: true }),
  last_seq: Schema.NonNegativeInt,
  owner: Schema.optionalWith(Schema.String, { exact: true }),
  created_at: Schema.Int,
  updated_at: Schema.Int
})
export type RunInfo = typeof RunInfo.Type

export const runInfo = (run: Run): RunInfo => ({
  id: run.id,
  conversation_id: run.conversationId,
  kind: run.kind,
  status: run.status,
  ...(run.stopReason !== undefined ? { stop_reason: run.stopReason } : {}),
  last_seq: run.lastSeq,
  ...(run.owner !== undefined ? { owner: run.owner } : {}),
  created_at: run.createdAt,
  updated_at: run.updatedAt
})
