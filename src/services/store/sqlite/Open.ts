import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, type Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { StoreError } from "../../../domain/Errors.js"
import { makeSqliteClient, type SqliteSql } from "./Client.js"
import { classify, corruptError, guard, newerSchemaError, openFailure, readOnlyError } from "./Failures.js"
import { HEADER_SIZE, parseHeader, type SqliteHeader } from "./Header.js"
import { APPLICATION_ID, migrate, MIGRATIONS_TABLE, SCHEMA_VERSION } from "./Schema.js"

export interface OpenOptions {
  readonly filename: string
  /**
   * `normal` (default): a commit survives a killed process; a power cut may lose the last commits
   * but never corrupts. `full`: a commit also survives a power cut, at one fsync per commit.
   */
  readonly synchronous?: "normal" | "full"
  /** How long a write waits for another process's write lock before failing (default 5000 ms). */
  readonly busyTimeoutMs?: number
}

const attempt = <A>(path: string, f: () => A): Effect.Effect<A, StoreError> =>
  Effect.try({ try: f, catch: (e) => classify(path, e) })

const readHead = (path: string): Uint8Array => {
  const bytes = Buffer.alloc(HEADER_SIZE)
  const fd = Fs.openSync(path, "r")
  try {
    return bytes.subarray(0, Fs.readSync(fd, bytes, 0, HEADER_SIZE, 0))
  } finally {
    Fs.closeSync(fd)
  }
}

/**
 * Creates what is missing (directories 0700, an empty file 0600, never replacing anything) and
 * reads what exists without opening it in SQLite. Answers the file's header, or undefined when
 * there is none yet (a new file, or one whose only content is still in its WAL).
 */
const prepareFile = (path: string): Effect.Effect<SqliteHeader | undefined, StoreError> =>
  attempt(path, () => {
    Fs.mkdirSync(Path.dirname(path), { recursive: true, mode: 0o700 })
    try {
      // "wx": create only if absent, so an existing file is never truncated.
      Fs.closeSync(Fs.openSync(path, "wx", 0o600))
    } catch (e) {
      if ((e as { readonly code?: unknown }).code !== "EEXIST") throw e
    }
    return Fs.statSync(path)
  }).pipe(Effect.flatMap((stat) => {
    if (!stat.isFile()) {
      return Effect.fail(
        new StoreError({ reason: "io", path, message: `${path} is not a regular file; move it aside or set BATON_HOME elsewhere.` })
      )
    }
    return attempt(path, () => {
      Fs.accessSync(Path.dirname(path), Fs.constants.W_OK)
      Fs.accessSync(path, Fs.constants.R_OK | Fs.constants.W_OK)
      return stat.size === 0 ? "none" as const : parseHeader(readHead(path)) ?? "invalid" as const
    }).pipe(Effect.flatMap((header) =>
      header === "invalid"
        ? Effect.fail(corruptError(path, "is not a SQLite database"))
        : Effect.succeed(header === "none" ? undefined : header)
    ))
  }))

interface Identity {
  readonly applicationId: number
  readonly version: number
  readonly hasTables: boolean
}

/** Whether a file is Baton's and of a schema this Baton knows; `fresh` when it holds nothing yet. */
const judge = (path: string, id: Identity): Effect.Effect<{ readonly fresh: boolean }, StoreError> => {
  if (!id.hasTables && (id.applicationId === 0 || id.applicationId === APPLICATION_ID)) {
    return Effect.succeed({ fresh: id.applicationId === 0 })
  }
  if (id.applicationId !== APPLICATION_ID) return Effect.fail(corruptError(path, "is a SQLite database that Baton did not create"))
  if (id.version > SCHEMA_VERSION) return Effect.fail(newerSchemaError(path, id.version, SCHEMA_VERSION))
  return Effect.succeed({ fresh: false })
}

const connect = (path: string) =>
  makeSqliteClient(path).pipe(Effect.provide(Reactivity.layer), openFailure(path))

/** The same judgement from inside SQLite, which also sees what is still in the WAL. */
const inspect = (sql: SqlClient, path: string) =>
  Effect.gen(function*() {
    const read = guard(path)
    const [app] = yield* read(sql<{ readonly application_id: number }>`PRAGMA application_id`)
    const [user] = yield* read(sql<{ readonly user_version: number }>`PRAGMA user_version`)
    const tables = yield* read(sql<{ readonly name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`)
    let version = user?.user_version ?? 0
    if (tables.some((t) => t.name === MIGRATIONS_TABLE)) {
      const [row] = yield* read(sql<{ readonly v: number | null }>`SELECT max(migration_id) AS v FROM ${sql(MIGRATIONS_TABLE)}`)
      version = Math.max(version, row?.v ?? 0)
    }
    return yield* judge(path, { applicationId: app?.application_id ?? 0, version, hasTables: tables.length > 0 })
  })

/**
 * Opens the store file: one connection (WAL), explicit synchronous and busy timeout, foreign keys,
 * then the missing migrations. Every failure is a StoreError naming the path.
 */
export const openDatabase = (options: OpenOptions): Effect.Effect<SqliteSql, StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const path = Path.resolve(options.filename)
    const header = yield* prepareFile(path)
    // Refuse what the header already shows before SQLite touches the file (it would switch a
    // foreign database to WAL); the header can lag behind the WAL, so SQLite is asked again.
    if (header !== undefined) {
      yield* judge(path, {
        applicationId: header.applicationId,
        version: header.userVersion,
        hasTables: header.schemaCookie > 0
      })
    }
    const sql = yield* connect(path)
    const { fresh } = yield* inspect(sql, path)
    const run = guard(path)
    // The client sets only journal_mode; SQLite would pick FULL on a new file and NORMAL on reopen.
    yield* run(sql.unsafe(`PRAGMA synchronous = ${options.synchronous === "full" ? "FULL" : "NORMAL"}`))
    yield* run(sql.unsafe(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`))
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
