import { Deferred, Duration, Effect, Random, Ref, Schedule, ScheduleDecision, ScheduleInterval } from "effect"
import { type Attempts, type Budgets, type Failure, noAttempts, type Recovery, step as policyStep } from "./Recovery.js"
import { ATTR, RETRY_EVENT, spanEvent } from "./Telemetry.js"

/**
 * The one runner of the recovery policy. Every retry in Baton — the backend run, compaction, the
 * client's busy and stale-approval recovery, the broken-stream reconnect, the remote stream, SQLite's
 * lost races — is `Effect.retryOrElse` over `policy(budgets, hooks)` (the remote stream drives the same schedule by hand): the pure
 * policy decides, the hooks announce (`request_end{retrying, retry_in_ms}`), wait (skippably) and
 * prepare the next attempt (`[turn_retried]`, a compaction, stale-approval denials). Nothing else
 * counts attempts or sleeps for a retry.
 */

/** What the policy made of one failure. */
export interface Step<E extends Failure> {
  readonly failure: E
  readonly decision: Recovery
  /** Failures of this category recovered from before this one (0 for the first). */
  readonly attempt: number
}

export interface Hooks<E extends Failure, R> {
  /** Before the wait of a continuing step: tell whoever watches, with the delay about to start. */
  readonly announce?: (step: Step<E>, delayMs: number) => Effect.Effect<void, never, R>
  /** The wait Retry and WaitBusy ask for (default: sleep). A run's can be cut short by skipReconnectWait. */
  readonly wait?: (delayMs: number) => Effect.Effect<void>
  /** After the wait, before the next attempt. */
  readonly prepare?: (step: Step<E>) => Effect.Effect<void, never, R>
  /** Spread the wait over ±20 % (two processes that lost the same race do not meet again). */
  readonly jitter?: boolean
  /** The counts to start from (a run whose task spent reconnects before it); default none. */
  readonly from?: Attempts
}

/** The delay a decision asks for; CompactThenRetry and ResolveStaleApproval go again at once. */
export const delayOf = (decision: Recovery): number =>
  decision._tag === "Retry" || decision._tag === "WaitBusy" ? decision.delayMs : 0

const waits = (decision: Recovery) => decision._tag === "Retry" || decision._tag === "WaitBusy"

/**
 * The policy as a Schedule over failures: one Step out per failure, continuing until the decision is
 * Fail (whose Step is then the last output). It adds no delay of its own: waiting is a hook, so it can
 * be announced first and skipped.
 */
export const decisions = <E extends Failure>(budgets: Budgets, from: Attempts = noAttempts): Schedule.Schedule<Step<E>, E> =>
  Schedule.makeWithState<Attempts, E, Step<E>>(from, (now, failure, attempts) =>
    Effect.sync(() => {
      const next = policyStep(attempts, failure, budgets)
      const out: Step<E> = { failure, decision: next.decision, attempt: next.attempt }
      return [
        next.attempts,
        out,
        next.decision._tag === "Fail" ? ScheduleDecision.done : ScheduleDecision.continueWith(ScheduleInterval.after(now))
      ] as const
    }))

const sleep = (delayMs: number) => Effect.sleep(Duration.millis(delayMs))

/** `decisions` with its hooks run on every continuing step: announce, then wait, then prepare. */
export const policy = <E extends Failure, R = never>(budgets: Budgets, hooks: Hooks<E, R> = {}): Schedule.Schedule<Step<E>, E, R> =>
  decisions<E>(budgets, hooks.from).pipe(
    Schedule.tapOutput((step) =>
      step.decision._tag === "Fail" ? Effect.void : Effect.gen(function*() {
        const planned = delayOf(step.decision)
        const delayMs = hooks.jitter === true && planned > 0 ? Math.round(planned * (yield* Random.nextRange(0.8, 1.2))) : planned
        // On whatever span runs the retry (a run, a task, a stream): a tracing backend shows each retry in place.
        yield* spanEvent(RETRY_EVENT, {
          [ATTR.errorType]: step.failure._tag,
          "baton.retry.decision": step.decision._tag,
          "baton.retry.attempt": step.attempt + 1,
          "baton.retry.delay_ms": delayMs
        })
        if (hooks.announce !== undefined) yield* hooks.announce(step, delayMs)
        if (waits(step.decision)) yield* (hooks.wait ?? sleep)(delayMs)
        if (hooks.prepare !== undefined) yield* hooks.prepare(step)
      }))
  )

/**
 * `self` retried by the policy; when it gives up, `orElse` gets the last failure and its Step (whose
 * decision is the Fail, with its status: `auth` or `failed`).
 */
export const retry = <A, E extends Failure, R, A2, E2, R2, RH = never>(
  self: Effect.Effect<A, E, R>,
  options: Hooks<E, RH> & {
    readonly budgets: Budgets
    readonly orElse: (failure: E, step: Step<E>) => Effect.Effect<A2, E2, R2>
  }
): Effect.Effect<A | A2, E2, R | R2 | RH> => Effect.retryOrElse(self, policy(options.budgets, options), options.orElse)

/**
 * A reconnect wait that skipReconnectWait can end early without touching the retry count: each wait
 * publishes a fresh signal in `skip`, and completing it ends that wait only.
 */
export const skippableWait = (skip: Ref.Ref<Deferred.Deferred<void>>) => (delayMs: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    const signal = yield* Deferred.make<void>()
    yield* Ref.set(skip, signal)
    yield* Effect.race(sleep(delayMs), Deferred.await(signal))
  })

