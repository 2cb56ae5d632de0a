import { Effect } from "effect"
import { StoreError } from "../../../domain/Errors.js"
import { codeOf, detailOf, guardWith, isSqlError, retryLostRaces } from "../SqlFailures.js"

/**
 * Turns whatever SQLite or the file system throws into a StoreError that names the file and says
 * what to do. better-sqlite3 reports a `code` (SQLITE_CORRUPT, SQLITE_READONLY_DBMOVED…), Node an
 * errno `code` (EACCES…); either may sit a few `cause` links down (SqlError, MigrationError).
 */

export const corruptError = (path: string, what: string) =>
  new StoreError({
    reason: "corrupt",
    path,
    message: `${path} ${what}. Baton changed nothing in it. Move the file aside (for example ` +
      `\`mv ${path} ${path}.bad\`) to start a fresh store there, restore a backup, or set BATON_HOME elsewhere.`
  })

export const readOnlyError = (path: string, detail: string) =>
  new StoreError({
    reason: "read_only",
    path,
    message: `Baton cannot write ${path} (${detail}). Make the file and its directory writable by this ` +
      `user, or set BATON_HOME to a writable directory.`
  })

export const newerSchemaError = (path: string, found: number, known: number) =>
  new StoreError({
    reason: "newer_schema",
    path,
    message: `${path} was written by a newer Baton (schema version ${found}; this Baton knows up to ` +
      `${known}). Upgrade Baton to open it; the file was not changed.`
  })

export const classify = (path: string, error: unknown): StoreError => {
  const code = codeOf(error)
  const detail = detailOf(error)
  if (detail.includes("database connection is not open")) {
    return new StoreError({
      reason: "closed",
      path,
      message: `The store on ${path} was already closed (its layer's scope ended); this is a bug in the caller.`
    })
  }
  if (code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB") {
    return corruptError(path, `is damaged or is not a SQLite database (${detail})`)
  }
  if (
    code.startsWith("SQLITE_READONLY") || code.startsWith("SQLITE_CANTOPEN") || code === "SQLITE_PERM" ||
    code === "EACCES" || code === "EPERM" || code === "EROFS"
  ) return readOnlyError(path, detail)
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) {
    return new StoreError({
      reason: "io",
      path,
      message: `${path} stayed locked by another process (${detail}); try again once it is done.`
    })
  }
  if (code === "SQLITE_FULL" || code === "ENOSPC") {
    return new StoreError({ reason: "io", path, message: `The disk holding ${path} is full (${detail}); free space and retry.` })
  }
  return new StoreError({ reason: "io", path, message: `Baton could not use ${path}: ${detail}` })
}

/** SQL failures become StoreErrors naming the file. */
export const guard = (path: string) => guardWith((e) => classify(path, e))

/**
 * Failures that end at once and pass: a stale snapshot, another connection recovering the WAL. A plain
 * SQLITE_BUSY has already waited the whole busy timeout (with the event loop blocked, since
 * better-sqlite3 is synchronous), so it is reported rather than waited for again.
 */
export const isTransientBusy = (e: unknown): boolean =>
  isSqlError(e) && (codeOf(e) === "SQLITE_BUSY_SNAPSHOT" || codeOf(e) === "SQLITE_BUSY_RECOVERY")

/** A stale snapshot or a WAL recovery lost a race: tried again through the recovery policy. */
export const retryBusy = retryLostRaces(isTransientBusy)

/** Building a SQLite connection throws synchronously (a defect); this gives it a reason and the path. */
export const openFailure = (path: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreError, R> =>
  Effect.catchAllDefect(effect, (defect) => Effect.fail(classify(path, defect)))
