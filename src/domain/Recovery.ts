import { Data } from "effect"
import type { RequestEndStatus } from "./Events.js"
import { DEFAULT_COMPACTION_RECONNECTS, defaultReconnectSettings } from "./Settings.js"

/**
 * The recovery policy: the only place that decides whether a failure is retried, how long to wait,
 * and when to give up. Pure: no services, no I/O, no clock. Callers count failures per category.
 */
export type Recovery = Data.TaggedEnum<{
  /** Reconnect inside the same run after `delayMs`; `reminder` asks an empty-answering model for content. */
  Retry: { readonly delayMs: number; readonly reminder: boolean }
  CompactThenRetry: {}
  ResolveStaleApproval: {}
  WaitBusy: { readonly delayMs: number }
  Fail: { readonly status: Extract<RequestEndStatus, "failed" | "auth"> }
}>
export const Recovery = Data.taggedEnum<Recovery>()

export interface Budgets {
  /** Reconnects per run (5 for model turns, 3 for compaction requests). */
  readonly reconnects: number
  readonly baseMs: number
  readonly capMs: number
  /** Compactions triggered by context-overflow errors per run. */
  readonly overflowCompactions: number
  readonly busyRetries: number
  readonly busyBaseMs: number
  readonly emptyRetries: number
  readonly emptyBaseMs: number
  /** Stale-approval resolutions per task: once, so a desync can never loop. */
  readonly staleApprovalResolutions: number
  /** A storage transaction that lost a race with another process (stale snapshot), retried whole. */
  readonly storeBusyRetries: number
  readonly storeBusyBaseMs: number
}

export const turnBudgets: Budgets = {
  reconnects: defaultReconnectSettings.retries,
  baseMs: defaultReconnectSettings.baseMs,
  capMs: defaultReconnectSettings.capMs,
  overflowCompactions: 3,
  busyRetries: 3,
  busyBaseMs: 10_000,
  emptyRetries: 2,
  emptyBaseMs: 500,
  staleApprovalResolutions: 1,
  storeBusyRetries: 5,
  storeBusyBaseMs: 20
}

export const compactionBudgets: Budgets = { ...turnBudgets, reconnects: DEFAULT_COMPACTION_RECONNECTS }

/** Failure categories; each has its own counter and budget. */
export type Category = "reconnect" | "overflow" | "busy" | "empty" | "stale_approval" | "store_busy" | "auth" | "terminal"

/** Any tagged failure. Unknown tags are terminal: retrying what we do not understand risks running things twice. */
export interface Failure {
  readonly _tag: string
  readonly retryAfterMs?: number | undefined
}

const reconnectTags: ReadonlySet<string> = new Set([
  "ProviderTimeout",
  "ProviderConnectionLost",
  "ProviderMalformed",
  "ProviderRateLimited",
  "ProviderServerError",
  "ProviderOverloaded",
  "ProviderTransientQuota",
  "StreamBroken"
])

export const categoryOf = (failure: Failure): Category => {
  if (reconnectTags.has(failure._tag)) return "reconnect"
  switch (failure._tag) {
    case "ProviderContextOverflow":
      return "overflow"
    case "Conflict":
      return "busy"
    case "EmptyResponse":
      return "empty"
    case "ApprovalPending":
      return "stale_approval"
    case "StoreBusy":
      return "store_busy"
    case "ProviderAuth":
      return "auth"
    default:
      return "terminal"
  }
}

/** min(base · 2^attempt, cap), the reconnect ladder: 250, 500, 1000, 2000, 4000 ms by default. */
export const backoffMs = (attempt: number, budgets: Budgets): number =>
  Math.min(budgets.baseMs * 2 ** attempt, budgets.capMs)

/**
 * Decide what to do about `failure`, given `attempt` = how many failures of the same category
 * this run (or task, for busy / stale approvals) has already recovered from.
 */
export const decide = (failure: Failure, attempt: number, budgets: Budgets): Recovery => {
  switch (categoryOf(failure)) {
    case "reconnect": {
      if (attempt >= budgets.reconnects) return Recovery.Fail({ status: "failed" })
      const delayMs = failure.retryAfterMs !== undefined
        ? Math.min(failure.retryAfterMs, budgets.capMs)
        : backoffMs(attempt, budgets)
      return Recovery.Retry({ delayMs, reminder: false })
    }
    case "overflow":
      return attempt < budgets.overflowCompactions ? Recovery.CompactThenRetry() : Recovery.Fail({ status: "failed" })
    case "busy":
      return attempt < budgets.busyRetries
        ? Recovery.WaitBusy({ delayMs: budgets.busyBaseMs * 2 ** attempt })
        : Recovery.Fail({ status: "failed" })
    case "empty":
      return attempt < budgets.emptyRetries
        ? Recovery.Retry({
          delayMs: budgets.emptyBaseMs * (attempt + 1),
          reminder: attempt + 1 === budgets.emptyRetries
        })
        : Recovery.Fail({ status: "failed" })
    case "stale_approval":
      return attempt < budgets.staleApprovalResolutions
        ? Recovery.ResolveStaleApproval()
        : Recovery.Fail({ status: "failed" })
    case "store_busy":
      return attempt < budgets.storeBusyRetries
        ? Recovery.Retry({ delayMs: budgets.storeBusyBaseMs * 2 ** attempt, reminder: false })
        : Recovery.Fail({ status: "failed" })
    case "auth":
      return Recovery.Fail({ status: "auth" })
    case "terminal":
      return Recovery.Fail({ status: "failed" })
  }
}

/** Per-category failure counts, so a timeout does not spend the overflow budget and vice versa. */
export type Attempts = Readonly<Partial<Record<Category, number>>>

export const noAttempts: Attempts = {}

/** One step of the policy over a run: the decision, the attempt it was taken at, and the new counts. */
export const step = (
  attempts: Attempts,
  failure: Failure,
  budgets: Budgets
): { readonly decision: Recovery; readonly attempt: number; readonly attempts: Attempts } => {
  const category = categoryOf(failure)
  const attempt = attempts[category] ?? 0
  return { decision: decide(failure, attempt, budgets), attempt, attempts: { ...attempts, [category]: attempt + 1 } }
}

export const EMPTY_RESPONSE_REMINDER =
  "[system_reminder]The previous response was empty. Please provide a response with either text content or a tool call.[/system_reminder]"
