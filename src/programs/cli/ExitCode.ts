import * as Data from "effect/Data"
import type { StopReasonValue, TaskEvent } from "../../domain/Events.js"

/** The process exit codes, documented in the README. */
export const ExitCode = {
  ok: 0,
  failed: 1,
  usage: 2,
  auth: 3,
  interrupted: 130
} as const

/** How a task ended: its last stop reason (`requires_approval` is never last), or `abort`. */
export type Outcome = StopReasonValue | "abort" | undefined

export const stepOutcome = (outcome: Outcome, event: TaskEvent): Outcome =>
  // A subagent's ending is its Task call's result, not the task's.
  event.origin !== undefined
    ? outcome
    : event.type === "abort"
    ? "abort"
    : event.type === "stop_reason" && event.reason !== "requires_approval"
    ? event.reason
    : outcome

export const exitCodeFor = (outcome: Outcome): number => {
  switch (outcome) {
    case "end_turn":
      return ExitCode.ok
    case "auth":
      return ExitCode.auth
    case "cancelled":
    case "abort":
      return ExitCode.interrupted
    default:
      return ExitCode.failed
  }
}

/** A command that ran and ended badly; its output already said why, so main only sets the code. */
export class CommandExit extends Data.TaggedError("CommandExit")<{ readonly code: number }> {}
