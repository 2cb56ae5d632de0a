import { Data } from "effect"
import type {
  ApprovalPending,
  BackendError,
  ChunkSeqError,
  EmptyResponse,
  InvalidSummary,
  RunnerLost,
  StoreBusy,
  StreamBroken
} from "./Errors.js"
import type { RequestEndStatus } from "./Events.js"
import type { ProviderError } from "./ProviderError.js"
import { DEFAULT_COMPACTION_RECONNECTS, defaultReconnectSettings } from "./Settings.js"

/**
 * The recovery policy: the only place that decides whether a failure is retried, how long to wait,
 * and when to give up. Pure: no services, no I/O, no clock. RecoverySchedule.ts turns it into the one
 * Schedule every retry in Baton runs on; nothing else counts attempts or waits for a retry.
 */
export type Recovery = Data.TaggedEnum<{
  /** Try again after `delayMs`; `reminder` asks an empty-answering model for content. */
  Retry: { readonly delayMs: number; readonly reminder: boolean }
  CompactThenRetry: {}
  /** Send the request again with every image replaced by a short placeholder. */
  RetryWithoutImages: {}
  ResolveStaleApproval: {}
  WaitBusy: { readonly delayMs: number }
  Fail: { readonly status: Extract<RequestEndStatus, "failed" | "auth"> }
}>
export const Recovery = Data.taggedEnum<Recovery>()

export interface Budgets {
  /** Reconnects (5 for model turns, 3 for compaction requests), counted as `reconnectReset` says. */
  readonly reconnects: number
  /**
   * When the reconnect count starts again: with each user turn (`turn`: the task's runs, approval
   * continuations included, share one budget; each send says what its task spent) or each run.
   */
  readonly reconnectReset: "turn" | "run"
  /**
   * A run that gives up on a lost connection after its model issued tool calls: the task runs them and
   * sends their results with another attempt (true), instead of ending with them as carry-over.
   */
  readonly continueWithIssuedCalls: boolean
  readonly baseMs: number
  readonly capMs: number
  /** Compactions triggered by context-overflow errors per run. */
  readonly overflowCompactions: number
  /**
   * The refusal of an oversized request (context overflow) after which it is sent without its images:
   * images the estimate undercounted are a likely cause even when the provider does not say so.
   */
  readonly stripImagesAtRefusal: number
  readonly busyRetries: number
  readonly busyBaseMs: number
  readonly emptyRetries: number
  readonly emptyBaseMs: number
  /** Stale-approval resolutions per task: once, so a desync can never loop. */
  readonly staleApprovalResolutions: number
  /** A storage transaction that lost a race with another process (stale snapshot), retried whole. */
  readonly storeBusyRetries: number
  readonly storeBusyBaseMs: number
  /**
   * A database out of reach (StoreError `io`: its pool stayed full past its wait, the server restarting),
   * waited out on min(base · 2^n, cap). Only a cluster's Drive spends it: its answer is stored for good,
   * and a failed one would leave its run `running` with nobody to drive it.
   */
  readonly storeOutageRetries: number
  readonly storeOutageBaseMs: number
  readonly storeOutageCapMs: number
  /** A compaction's answers that were no summary, re-asked at once: 5 answers in all. */
  readonly invalidSummaryRetries: number
}

export const turnBudgets: Budgets = {
  reconnects: defaultReconnectSettings.retries,
  reconnectReset: "turn",
  continueWithIssuedCalls: true,
  baseMs: defaultReconnectSettings.baseMs,
  capMs: defaultReconnectSettings.capMs,
  overflowCompactions: 3,
  stripImagesAtRefusal: 2,
  busyRetries: 3,
  busyBaseMs: 10_000,
  emptyRetries: 2,
  emptyBaseMs: 500,
  staleApprovalResolutions: 1,
  storeBusyRetries: 5,
  storeBusyBaseMs: 20,
  storeOutageRetries: 0,
  storeOutageBaseMs: 250,
  storeOutageCapMs: 10_000,
  invalidSummaryRetries: 4
}

export const compactionBudgets: Budgets = { ...turnBudgets, reconnects: DEFAULT_COMPACTION_RECONNECTS, reconnectReset: "run" }

/**
 * `budgets` with only its reconnects left: for a call to a server whose own answers (busy, an
 * approval pending, a store's lost race) are the caller's to act on, while a server that could not
 * be reached (restarting, draining) is waited for on the usual ladder.
 */
export const reconnectsOnly = (budgets: Budgets): Budgets => ({
  ...budgets,
  overflowCompactions: 0,
  stripImagesAtRefusal: 0,
  busyRetries: 0,
  emptyRetries: 0,
  staleApprovalResolutions: 0,
  storeBusyRetries: 0,
  storeOutageRetries: 0,
  invalidSummaryRetries: 0
})

/** A cluster's Drive: nothing but a database out of reach is retried, and that for as long as it lasts. */
export const driveBudgets: Budgets = { ...reconnectsOnly(turnBudgets), reconnects: 0, storeOutageRetries: Number.POSITIVE_INFINITY }

/**
 * Every failure the policy knows, as tagged errors: renaming one, or adding one to these unions
 * without a category below, is a compile error rather than a silent "terminal".
 */
export type Failure =
  | ProviderError
  | EmptyResponse
  | InvalidSummary
  | RunnerLost
  | StoreBusy
  | StreamBroken
  | ApprovalPending
  | ChunkSeqError
  | BackendError

/** Failure categories; each has its own counter and budget. */
export type Category =
  | "reconnect"
  | "overflow"
  | "too_large"
  | "busy"
  | "empty"
  | "invalid_summary"
  | "stale_approval"
  | "store_busy"
  | "store_outage"
  | "auth"
  | "terminal"

const categories: { readonly [Tag in Failure["_tag"]]: Category } = {
  ProviderTimeout: "reconnect",
  ProviderConnectionLost: "reconnect",
  ProviderMalformed: "reconnect",
  ProviderRateLimited: "reconnect",
  ProviderServerError: "reconnect",
  ProviderOverloaded: "reconnect",
  ProviderTransientQuota: "reconnect",
  StreamBroken: "reconnect",
  RunnerLost: "reconnect",
  ProviderContextOverflow: "overflow",
  ProviderRequestTooLarge: "too_large",
  Conflict: "busy",
  EmptyResponse: "empty",
  InvalidSummary: "invalid_summary",
  ApprovalPending: "stale_approval",
  StoreBusy: "store_busy",
  ProviderAuth: "auth",
  ProviderQuotaExceeded: "terminal",
  ProviderInvalidRequest: "terminal",
  ProviderReplayMiss: "terminal",
  InvalidToolCallIds: "terminal",
  ToolCallAnswered: "terminal",
  NoTaskRunning: "terminal",
  NotFound: "terminal",
  InvalidInput: "terminal",
  StoreError: "terminal",
  Unauthorized: "terminal",
  ModelCallFailed: "terminal",
  ChunkSeqError: "terminal"
}

/** Anything else (a tag from a newer peer, decoded off the wire) is terminal: retrying what we do not understand risks running things twice. */
export const categoryOf = (failure: Failure): Category =>
  failure._tag === "StoreError" && failure.reason === "io" ? "store_outage" : categoryOfTag(failure._tag)

const categoryOfTag = (tag: string): Category => (categories as Readonly<Record<string, Category | undefined>>)[tag] ?? "terminal"

/** Whether a failure, by its tag (a request_end's `error.tag`), spends the reconnect budget. */
export const spendsReconnect = (tag: string): boolean => categoryOfTag(tag) === "reconnect"

/** The reconnects a task's next run starts with: what its earlier runs spent, unless each run starts again. */
export const reconnectsCarried = (spent: number, budgets: Budgets): number => (budgets.reconnectReset === "turn" ? spent : 0)

/** The attempts a run starts from, given the reconnects its task spent before it. */
export const startingAttempts = (reconnectsSpent: number): Attempts => (reconnectsSpent > 0 ? { reconnect: reconnectsSpent } : noAttempts)

/**
 * After a run gave up (its stop_reason's error tag), having issued `callsIssued` tool calls: the task
 * goes on — the calls' results, as carry-over, then another attempt — or ends. Only a lost connection
 * goes on, and only when its model issued calls: they are progress, and their results are owed.
 */
export const afterGivingUp = (errorTag: string | undefined, callsIssued: number, budgets: Budgets): "continue" | "end" =>
  budgets.continueWithIssuedCalls && callsIssued > 0 && errorTag !== undefined && spendsReconnect(errorTag) ? "continue" : "end"

/** min(base · 2^attempt, cap), the reconnect ladder: 250, 500, 1000, 2000, 4000 ms by default. */
export const backoffMs = (attempt: number, budgets: Budgets): number =>
  Math.min(budgets.baseMs * 2 ** attempt, budgets.capMs)

const retryAfterOf = (failure: Failure): number | undefined =>
  "retryAfterMs" in failure ? failure.retryAfterMs : undefined

/**
 * Decide what to do about `failure`, given `attempt` = how many failures of the same category
 * this run (or task, for busy / stale approvals) has already recovered from.
 */
export const decide = (failure: Failure, attempt: number, budgets: Budgets): Recovery => {
  switch (categoryOf(failure)) {
    case "reconnect": {
      if (attempt >= budgets.reconnects) return Recovery.Fail({ status: "failed" })
      const retryAfterMs = retryAfterOf(failure)
      const delayMs = retryAfterMs !== undefined ? Math.min(retryAfterMs, budgets.capMs) : backoffMs(attempt, budgets)
      return Recovery.Retry({ delayMs, reminder: false })
    }
    case "overflow": {
      // One refusal (at stripImagesAtRefusal) sends the request without images; every other compacts.
      const strip = budgets.stripImagesAtRefusal - 1
      if (attempt === strip) return Recovery.RetryWithoutImages()
      const compactions = attempt > strip && strip >= 0 ? attempt - 1 : attempt
      return compactions < budgets.overflowCompactions ? Recovery.CompactThenRetry() : Recovery.Fail({ status: "failed" })
    }
    case "too_large":
      // Once without images; a request still too large is then a context too large: compact it.
      return attempt === 0
        ? Recovery.RetryWithoutImages()
        : attempt <= budgets.overflowCompactions
        ? Recovery.CompactThenRetry()
        : Recovery.Fail({ status: "failed" })
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
    case "invalid_summary":
      return attempt < budgets.invalidSummaryRetries ? Recovery.Retry({ delayMs: 0, reminder: false }) : Recovery.Fail({ status: "failed" })
    case "stale_approval":
      return attempt < budgets.staleApprovalResolutions
        ? Recovery.ResolveStaleApproval()
        : Recovery.Fail({ status: "failed" })
    case "store_busy":
      return attempt < budgets.storeBusyRetries
        ? Recovery.Retry({ delayMs: budgets.storeBusyBaseMs * 2 ** attempt, reminder: false })
        : Recovery.Fail({ status: "failed" })
    case "store_outage":
      return attempt < budgets.storeOutageRetries
        ? Recovery.Retry({ delayMs: Math.min(budgets.storeOutageBaseMs * 2 ** attempt, budgets.storeOutageCapMs), reminder: false })
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
