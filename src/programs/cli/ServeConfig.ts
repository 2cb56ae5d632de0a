import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { ConfigError } from "../../domain/Errors.js"
import type { LocalOptions } from "../backend/BackendLocal.js"
import type { RunnerOptions } from "./ClusterRunner.js"
import { type AppEnv, databaseUrl } from "./Env.js"
import type { ServeCommandOptions } from "./ServeCommand.js"

/**
 * `baton serve`'s own options, checked before anything is built: a cluster runner's address and lock
 * expiry, and how long an idle conversation stays in memory. Layers.ts builds the server from them.
 */

const DEFAULT_RUNNER_HOST = "127.0.0.1"
const DEFAULT_RUNNER_PORT = 34431
const DEFAULT_SHARD_LOCK_EXPIRATION_MS = 10_000

/**
 * `serve --cluster`: the runner's address and lock expiry, checked. A cluster needs the shared
 * PostgreSQL database (`--database`); the runner flags without `--cluster` are a usage error too.
 */
export const runner = (env: AppEnv, options: ServeCommandOptions): Effect.Effect<RunnerOptions | undefined, ConfigError> =>
  Effect.gen(function*() {
    const source = "baton serve --cluster"
    if (options.cluster !== true) {
      if (options.runnerHost !== undefined || options.runnerPort !== undefined) {
        return yield* new ConfigError({ source, message: "--runner-host and --runner-port only apply with --cluster" })
      }
      return undefined
    }
    const url = yield* databaseUrl(env)
    if (url === undefined) {
      return yield* new ConfigError({
        source,
        message: "--cluster needs the PostgreSQL database every runner shares: --database postgres://… or BATON_DATABASE_URL (SQLite stays single-node)"
      })
    }
    const port = options.runnerPort ?? DEFAULT_RUNNER_PORT
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      return yield* new ConfigError({ source, field: "--runner-port", message: `--runner-port must be a TCP port, 1 to 65535 (got ${port})` })
    }
    const expiry = options.shardLockExpirationMs ?? DEFAULT_SHARD_LOCK_EXPIRATION_MS
    if (!Number.isInteger(expiry) || expiry < 1_000 || expiry > 600_000) {
      return yield* new ConfigError({
        source,
        field: "--shard-lock-expiration",
        message: `--shard-lock-expiration / BATON_SHARD_LOCK_EXPIRATION_MS is in milliseconds, 1000 to 600000 (got ${expiry})`
      })
    }
    return { url, host: options.runnerHost ?? DEFAULT_RUNNER_HOST, port, shardLockExpirationMs: expiry }
  })

/**
 * `serve --passivation MS`: how long an idle conversation's actor stays in this process, checked.
 * Under 100 ms a conversation would be reloaded from the store between a client's calls; over a
 * day, idle conversations would only ever leave at a restart.
 */
export const passivation = (options: ServeCommandOptions): Effect.Effect<LocalOptions, ConfigError> => {
  const ms = options.passivationMs
  if (ms === undefined) return Effect.succeed({})
  if (!Number.isInteger(ms) || ms < 100 || ms > 86_400_000) {
    return Effect.fail(
      new ConfigError({
        source: "baton serve",
        field: "--passivation",
        message: `--passivation / BATON_PASSIVATION_MS is in milliseconds, 100 to 86400000 (got ${ms})`
      })
    )
  }
  return Effect.succeed({ passivation: Duration.millis(ms) })
}
