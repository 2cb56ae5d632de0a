import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Redacted, type Scope } from "effect"
import type { StoreError } from "../../../domain/Errors.js"
import { guard, type PgTarget, tooOldError } from "./Failures.js"
import { migrate } from "./Schema.js"
import { redactUrl, scrubber } from "./Url.js"

export interface PgOptions {
  /** `postgres://user:password@host:port/database`; libpq's query parameters (`sslmode`, `options`…) apply. */
  readonly url: string | Redacted.Redacted<string>
  /** Connections the pool may open (default 10). */
  readonly maxConnections?: number
}

const POOL_WAIT = "60 seconds"
const START_BOUND = "10 seconds"

/** PostgreSQL 14 is the oldest the schema and the docs were checked against. */
export const MIN_SERVER_VERSION = 140000

/** `server_version_num` (e.g. 150018) is new enough. */
export const supportedServer = (versionNum: number): boolean => versionNum >= MIN_SERVER_VERSION

export const targetOf = (url: string): PgTarget => ({ label: redactUrl(url), scrub: scrubber(url) })

/**
 * Connects a pool (one connection checked at once, so a wrong URL fails here), checks the server's
 * version, then runs the missing migrations. Every failure is a StoreError naming the database
 * without its password.
 */
export const openDatabase = (options: PgOptions): Effect.Effect<{ readonly sql: PgClient.PgClient; readonly target: PgTarget }, StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const url = Redacted.isRedacted(options.url) ? Redacted.value(options.url) : options.url
    const target = targetOf(url)
    const run = guard(target)
    // One connection first, bounded by START_BOUND: the pool's own check waits as long as its
    // connections may (POOL_WAIT), and cannot be cut short.
    yield* Effect.scoped(PgClient.make({ url: Redacted.make(url), applicationName: "baton", connectTimeout: START_BOUND, maxConnections: 1 })).pipe(
      Effect.provide(Reactivity.layer),
      run
    )
    const sql = yield* PgClient.make({
      url: Redacted.make(url),
      applicationName: "baton",
      // Also how long a query waits for a free connection of the pool: a burst of sends (a thousand
      // conversations at once) waits for one rather than fail.
      connectTimeout: POOL_WAIT,
      // A connection costs a SCRAM handshake (pbkdf2): a busy server keeps its pool rather than
      // close what sat idle between bursts and open it again for the next one.
      idleTimeout: "5 minutes",
      ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections })
    }).pipe(Effect.provide(Reactivity.layer), run)
    const [server] = yield* run(sql<{ readonly num: string; readonly version: string }>`SELECT
      current_setting('server_version_num') AS num, current_setting('server_version') AS version`)
    if (server === undefined || !supportedServer(Number(server.num))) {
      return yield* tooOldError(target, server?.version ?? "(unknown)")
    }
    yield* run(migrate(sql, target))
    return { sql, target }
  })
