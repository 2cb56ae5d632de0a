import { Effect, Schedule, ScheduleDecision, ScheduleInterval } from "effect"
import { type Attempts, type Budgets, type Failure, noAttempts, type Recovery, step } from "./Recovery.js"

/**
 * The recovery policy as a Schedule: continues after the policy's delay while it says Retry or WaitBusy,
 * stops on anything else. Its output is the last decision, so `Effect.retryOrElse` can act on
 * CompactThenRetry / ResolveStaleApproval / Fail. No other retry logic exists.
 */
export const fromPolicy = <E extends Failure>(budgets: Budgets): Schedule.Schedule<Recovery, E> =>
  Schedule.makeWithState<Attempts, E, Recovery>(noAttempts, (now, failure, attempts) =>
    Effect.sync(() => {
      const next = step(attempts, failure, budgets)
      const decision = next.decision
      switch (decision._tag) {
        case "Retry":
        case "WaitBusy":
          return [next.attempts, decision, ScheduleDecision.continueWith(ScheduleInterval.after(now + decision.delayMs))] as const
        default:
          return [next.attempts, decision, ScheduleDecision.done] as const
      }
    }))
