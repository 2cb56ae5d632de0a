import { Config, type ConfigError, Effect, Layer } from "effect"
import * as Os from "node:os"
import * as Path from "node:path"
import type { StoreError } from "../../domain/Errors.js"
import { openDatabase, type OpenOptions } from "./sqlite/Open.js"
import { makeSqliteStore } from "./sqlite/SqliteStore.js"
import { Store } from "../Store.js"

/**
 * services/store/ holds the Store adapters: SQLite (this module, the embedded default; opening the
 * file, its schema and failure mapping under sqlite/), PostgreSQL (Pg, for several processes or
 * machines; under pg/), the in-memory store for tests (Memory), what the two SQL stores share (the
 * store itself, its statements, commit, rows and failures: Sql*.ts) and the codec all of them use.
 */

export type SqliteOptions = OpenOptions

/**
 * The Store in one SQLite file, created on first use (directories 0700, file 0600). An existing file
 * that is not Baton's, is damaged, has a newer schema or cannot be written fails the layer with a
 * StoreError naming the path and what to do, and is left exactly as it was.
 */
export const layerSqlite = (options: SqliteOptions): Layer.Layer<Store, StoreError> =>
  Layer.scoped(
    Store,
    Effect.flatMap(openDatabase(options), (sql) => makeSqliteStore(sql, Path.resolve(options.filename)))
  )

/** `$BATON_HOME/baton.db`, with BATON_HOME defaulting to `~/.baton`. */
export const defaultFilename: Effect.Effect<string, ConfigError.ConfigError> = Config.string("BATON_HOME").pipe(
  Config.withDefault(Path.join(Os.homedir(), ".baton")),
  Effect.map((home) => Path.join(Path.resolve(home), "baton.db"))
)

export const layerDefault: Layer.Layer<Store, StoreError | ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.map(defaultFilename, (filename) => layerSqlite({ filename }))
)
