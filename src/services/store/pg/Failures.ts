import { StoreError } from "../../../domain/Errors.js"
import { codeOf, detailOf, guardWith, isSqlError, retryLostRaces } from "../SqlFailures.js"

/**
 * Turns whatever PostgreSQL, node-postgres or the network report into a StoreError that names the
 * database (its URL without the password) and says what to do. The server reports a SQLSTATE
 * (`28P01`, `3D000`…), Node an errno (`ECONNREFUSED`…); either may sit a few `cause` links down.
 * Every message is scrubbed of the URL and its password, whatever the driver put in it.
 */

/** Where the store lives, for messages: the redacted URL, and a scrubber for driver text. */
export interface PgTarget {
  readonly label: string
  readonly scrub: (text: string) => string
}

const UNREACHABLE = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "ETIMEDOUT", "ECONNRESET", "EPIPE"])

const isUnreachable = (code: string, detail: string) =>
  UNREACHABLE.has(code) || code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03" ||
  /timeout|timed out|Connection terminated/i.test(detail)

export const corruptError = (target: PgTarget, what: string) =>
  new StoreError({
    reason: "corrupt",
    path: target.label,
    message: `The database at ${target.label} ${what}. Baton changed nothing in it. Point Baton at an empty ` +
      `database, or give it a schema of its own (add \`?options=-c%20search_path%3Dbaton\` to the URL after ` +
      `\`CREATE SCHEMA baton\`), or restore a backup.`
  })

export const newerSchemaError = (target: PgTarget, found: number, known: number) =>
  new StoreError({
    reason: "newer_schema",
    path: target.label,
    message: `The database at ${target.label} was written by a newer Baton (schema version ${found}; this Baton ` +
      `knows up to ${known}). Upgrade Baton to use it; the database was not changed.`
  })

export const tooOldError = (target: PgTarget, version: string) =>
  new StoreError({
    reason: "io",
    path: target.label,
    message: `The server at ${target.label} runs PostgreSQL ${version}; Baton needs PostgreSQL 14 or newer.`
  })

export const classify = (target: PgTarget, error: unknown): StoreError => {
  const code = codeOf(error)
  const detail = target.scrub(detailOf(error))
  const at = target.label
  const fail = (reason: StoreError["reason"], message: string) => new StoreError({ reason, path: at, message })
  if (/pool after calling end/i.test(detail)) {
    return fail("closed", `The store on ${at} was already closed (its layer's scope ended); this is a bug in the caller.`)
  }
  if (/client password must be a string|password must be a string|no password/i.test(detail)) {
    return fail("io", `PostgreSQL at ${at} asks for a password and none was given: put it in the URL, in PGPASSWORD or in ~/.pgpass.`)
  }
  if (code === "28P01" || code === "28000") {
    return fail("io", `PostgreSQL at ${at} refused the credentials (${detail}); check the user and password in the URL.`)
  }
  if (code === "3D000") return fail("io", `PostgreSQL at ${at}: ${detail}. Create it (\`createdb\`) or fix the URL.`)
  if (code === "3F000") {
    return fail("io", `PostgreSQL at ${at}: the URL's search_path names no schema that exists (${detail}); create it (CREATE SCHEMA) or fix the URL.`)
  }
  if (code === "42501") return fail("read_only", `PostgreSQL at ${at} does not let this user do that (${detail}); grant it, or use another user.`)
  if (code === "25006") return fail("read_only", `PostgreSQL at ${at} is read-only (${detail}): a standby? Point Baton at the primary.`)
  if (code === "53100") return fail("io", `The disk of PostgreSQL at ${at} is full (${detail}); free space and retry.`)
  if (code === "53300") return fail("io", `PostgreSQL at ${at} has no connection left (${detail}); raise max_connections or use fewer clients.`)
  if (code.startsWith("23")) return fail("io", `PostgreSQL at ${at} refused a write (${detail}); nothing of it was kept.`)
  // pg's pool says this when no connection came free (or none could be made) in its whole wait.
  if (/timeout exceeded when trying to connect/i.test(detail)) {
    return fail("io", `PostgreSQL at ${at} gave no connection in time (${detail}): the server is overloaded or out of reach, or the pool is too small for the load.`)
  }
  if (isUnreachable(code, detail)) {
    return fail("io", `PostgreSQL at ${at} is not reachable (${detail}); check that it runs and that the URL's host and port are right.`)
  }
  return fail("io", `Baton could not use PostgreSQL at ${at}: ${detail}`)
}

export const guard = (target: PgTarget) => guardWith((e) => classify(target, e))

/** A serialization failure or a deadlock ends at once and rolls back: the transaction may run again. */
export const isLostRace = (e: unknown): boolean => isSqlError(e) && (codeOf(e) === "40001" || codeOf(e) === "40P01")

export const retryLostRace = retryLostRaces(isLostRace)

/** A run insert refused by runs_otid or runs_running: another writer created a run meanwhile. */
export const isRunRace = (e: unknown): boolean => {
  if (!isSqlError(e) || codeOf(e) !== "23505") return false
  const constraint = (e.cause as { readonly constraint?: unknown } | undefined)?.constraint
  return constraint === "runs_otid" || constraint === "runs_running"
}
