import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient } from "@effect/sql/SqlClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { Effect, type Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { StoreError } from "../../domain/Errors.js"
import { classify, corruptError, guard, newerSchemaError, openFailure, readOnlyError } from "./Failures.js"
import { APPLICATION_ID, migrate, MIGRATIONS_TABLE, SCHEMA_VERSION } from "./Schema.js"

export interface OpenOptions {
  readonly filename: string
  /**
   * `normal` (default): a commit survives a killed process; a power cut may lose the last commits
   * but never corrupts. `full`: a commit also survives a power cut, at one fsync per commit.
   */
  readonly synchronous?: "normal" | "full"
}

const MAGIC = "SQLite format 3\u0000"

const attempt = <A>(path: string, f: () => A): Effect.Effect<A, StoreError> =>
  Effect.try({ try: f, catch: (e) => classify(path, e) })

/**
 * Creates what is missing (directories 0700, an empty file 0600, never replacing anything) and
 * checks what exists without writing to it. Answers whether the file is still empty.
 */
const prepareFile = (path: string) =>
  attempt(path, () => {
    Fs.mkdirSync(Path.dirname(path), { recursive: true, mode: 0o700 })
    try {
      // "wx": create only if absent, so an existing file is never truncated.
      Fs.closeSync(Fs.openSync(path, "wx", 0o600))
    } catch (e) {
      if ((e as { readonly code?: unknown }).code !== "EEXIST") throw e
    }
    return Fs.statSync(path)
  }).pipe(
    Effect.flatMap((stat) => {
      if (!stat.isFile()) return Effect.fail(corruptError(path, "is not a regular file"))
      return attempt(path, () => {
        Fs.accessSync(Path.dirname(path), Fs.constants.W_OK)
        Fs.accessSync(path, Fs.constants.R_OK | Fs.constants.W_OK)
        const wal = Fs.statSync(`${path}-wal`, { throwIfNoEntry: false })
        if (stat.size === 0 && (wal === undefined || wal.size === 0)) return true
        const header = Buffer.alloc(16)
        const fd = Fs.openSync(path, "r")
        try {
          Fs.readSync(fd, header, 0, 16, 0)
        } finally {
          Fs.closeSync(fd)
        }
        return header.toString("latin1") === MAGIC ? false : "not-sqlite"
      })
    }),
    Effect.flatMap((empty) =>
      empty === "not-sqlite" ? Effect.fail(corruptError(path, "is not a SQLite database")) : Effect.succeed(empty)
    )
  )

const connect = (path: string, readonly: boolean) =>
  SqliteClient.make({ filename: path, readonly, disableWAL: readonly }).pipe(
    Effect.provide(Reactivity.layer),
    openFailure(path)
  )

/**
 * Reads, read-only, whether the file is Baton's and which schema it has, before anything opens it
 * for writing: a foreign, damaged or newer file must come back exactly as it was.
 */
const probe = (path: string): Effect.Effect<{ readonly fresh: boolean }, StoreError> =>
  Effect.scoped(Effect.gen(function*() {
    const sql = yield* connect(path, true)
    const read = guard(path)
    const [app] = yield* read(sql<{ readonly application_id: number }>`PRAGMA application_id`)
    const [user] = yield* read(sql<{ readonly user_version: number }>`PRAGMA user_version`)
    const tables = yield* read(sql<{ readonly name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`)
    const appId = app?.application_id ?? 0
    if (tables.length === 0 && (appId === 0 || appId === APPLICATION_ID)) return { fresh: appId === 0 }
    if (appId !== APPLICATION_ID) return yield* corruptError(path, "is a SQLite database that Baton did not create")
    let version = user?.user_version ?? 0
    if (tables.some((t) => t.name === MIGRATIONS_TABLE)) {
      const [row] = yield* read(sql<{ readonly v: number | null }>`SELECT max(migration_id) AS v FROM ${sql(MIGRATIONS_TABLE)}`)
      version = Math.max(version, row?.v ?? 0)
    }
    if (version > SCHEMA_VERSION) return yield* newerSchemaError(path, version, SCHEMA_VERSION)
    return { fresh: false }
  }))

/**
 * Opens the store file: one connection (WAL), explicit synchronous and busy timeout, foreign keys,
 * then the missing migrations. Every failure is a StoreError naming the path.
 */
export const openDatabase = (options: OpenOptions): Effect.Effect<SqlClient, StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const path = Path.resolve(options.filename)
    const empty = yield* prepareFile(path)
    const { fresh } = empty ? { fresh: true } : yield* probe(path)
    const sql = yield* connect(path, false)
    const run = guard(path)
    // The client sets only journal_mode; SQLite would pick FULL on a new file and NORMAL on reopen.
    yield* run(sql.unsafe(`PRAGMA synchronous = ${options.synchronous === "full" ? "FULL" : "NORMAL"}`))
    yield* run(sql.unsafe(`PRAGMA busy_timeout = 5000`))
    yield* run(sql.unsafe(`PRAGMA foreign_keys = ON`))
    const [mode] = yield* run(sql<{ readonly journal_mode: string }>`PRAGMA journal_mode`)
    if (mode?.journal_mode !== "wal") {
      return yield* readOnlyError(path, `could not switch to WAL mode (journal_mode is ${mode?.journal_mode})`)
    }
    if (fresh) yield* run(sql.unsafe(`PRAGMA application_id = ${APPLICATION_ID}`))
    yield* migrate.pipe(
      Effect.provideService(SqlClient, sql),
      run,
      openFailure(path),
      Effect.catchTag("MigrationError", (e) => Effect.fail(classify(path, e)))
    )
    return sql
  })
