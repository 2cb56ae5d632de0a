import { SqlError } from "@effect/sql/SqlError"
import { Effect, Option, Schedule } from "effect"
import { StoreBusy, StoreError } from "../../domain/Errors.js"
import { type Failure, turnBudgets } from "../../domain/Recovery.js"
import { policy } from "../../domain/RecoverySchedule.js"

/**
 * What a SQL store's failures have in common, whichever database: reading the driver's code and
 * message out of the error chain, turning SqlErrors into StoreErrors, and retrying a transaction
 * that lost a race with another process through the recovery policy.
 */

/** The first `code` down the `cause` chain: SQLite's (SQLITE_BUSY…), PostgreSQL's SQLSTATE, or Node's errno. */
export const codeOf = (error: unknown): string => {
  let current: unknown = error
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const code = (current as { readonly code?: unknown }).code
    if (typeof code === "string") return code
    current = (current as { readonly cause?: unknown }).cause
  }
  return ""
}

/** The innermost message down the `cause` chain: the driver's own words. */
export const detailOf = (error: unknown): string => {
  let current: unknown = error
  let detail = ""
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const message = (current as { readonly message?: unknown }).message
    if (typeof message === "string" && message.length > 0) detail = message
    current = (current as { readonly cause?: unknown }).cause
  }
  return detail === "" ? String(error) : detail
}

export const isSqlError = (u: unknown): u is SqlError => u instanceof SqlError

/**
 * SQL failures become StoreErrors. @effect/sql turns a failed COMMIT or ROLLBACK into a defect, so
 * defects carrying a SqlError are mapped too; any other defect stays a defect (it is a bug).
 */
export const guardWith = (classify: (error: unknown) => StoreError) =>
<A, E, R>(effect: Effect.Effect<A, E | SqlError, R>): Effect.Effect<A, Exclude<E, SqlError> | StoreError, R> =>
  effect.pipe(
    Effect.catchIf((e): e is SqlError => isSqlError(e), (e) => Effect.fail(classify(e))),
    Effect.catchSomeDefect((d) => (isSqlError(d) ? Option.some(Effect.fail(classify(d))) : Option.none()))
  )

/** The recovery policy decides (a `StoreBusy` failure); jitter only spreads two processes' retries apart. */
const busyPolicy = policy<Failure>(turnBudgets, { jitter: true })

const LOST_RACE = new StoreBusy({ message: "the transaction lost a race with another process" })
// Any other failure is not the policy's to retry: it is terminal there, and passes through as it was.
const NOT_A_RACE = new StoreError({ reason: "io", message: "not a lost race" })

/**
 * Retries `effect` while it fails with what `lostRace` recognises, as the policy's `store_busy` budget
 * allows. The schedule is started only by a lost race, so a write that passes (nearly all) pays
 * nothing for it; the policy still sees every failure, the first one included, in order.
 */
export const retryLostRaces = (lostRace: (error: unknown) => boolean) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.catchIf(effect, lostRace, (first) => {
    let replayed = false
    const again = Effect.suspend(() => {
      if (replayed) return effect
      replayed = true
      return Effect.fail(first as E)
    })
    return Effect.retry(again, Schedule.mapInput(busyPolicy, (e: E): Failure => (lostRace(e) ? LOST_RACE : NOT_A_RACE)))
  })
