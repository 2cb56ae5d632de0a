import * as ValidationError from "@effect/cli/ValidationError"
import { isQuitException } from "@effect/platform/Terminal"
import * as Cause from "effect/Cause"
import * as Option from "effect/Option"
import { ExitCode } from "./ExitCode.js"

/**
 * How a failed command ends: the exit code, and the one line to print (none when the command or the
 * CLI parser has already said it). Never a stack trace for an expected failure.
 */
export interface Ending {
  readonly code: number
  readonly message: string | undefined
}

const tagged = (u: unknown): { readonly _tag: string; readonly message?: unknown } | undefined =>
  typeof u === "object" && u !== null && "_tag" in u && typeof u._tag === "string" ? (u as { _tag: string; message?: unknown }) : undefined

export const endingOf = (cause: Cause.Cause<unknown>): Ending => {
  if (Cause.isInterruptedOnly(cause)) return { code: ExitCode.interrupted, message: undefined }
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) {
    return { code: ExitCode.failed, message: `internal error (a bug in Baton; please report it):\n${Cause.pretty(cause)}` }
  }
  const error = failure.value
  if (ValidationError.isValidationError(error)) return { code: ExitCode.usage, message: undefined }
  if (isQuitException(error)) return { code: ExitCode.interrupted, message: undefined }
  const t = tagged(error)
  const message = t !== undefined && typeof t.message === "string" ? t.message : String(error)
  switch (t?._tag) {
    case "CommandExit":
      return { code: (error as { readonly code: number }).code, message: undefined }
    case "ConfigError":
    case "NotFound":
    case "InvalidInput":
    case "UsageError":
    case "ServerStartError":
    case "WebStartError":
      return { code: ExitCode.usage, message }
    case "Unauthorized":
      return { code: ExitCode.auth, message }
    default:
      return { code: ExitCode.failed, message }
  }
}
