import * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import type { Io } from "./Io.js"
import { BatonServer } from "../server/Server.js"

export interface ServeCommandOptions {
  readonly host: string | undefined
  readonly port: number | undefined
  /** From `--token`; BATON_TOKEN is read when it is absent. */
  readonly token: Redacted.Redacted<string> | undefined
  /** `--cluster`: one runner of a cluster on the `--database` PostgreSQL. */
  readonly cluster?: boolean
  readonly runnerHost?: string | undefined
  readonly runnerPort?: number | undefined
  /** `--shard-lock-expiration` / BATON_SHARD_LOCK_EXPIRATION_MS. */
  readonly shardLockExpirationMs?: number | undefined
  /** `--passivation` / BATON_PASSIVATION_MS. */
  readonly passivationMs?: number | undefined
}

/** What the start-up lines say besides the address: the model, the store (file, or database URL without its password), whether a token guards it. */
export interface ServeBanner {
  readonly model: string
  readonly store: string
  readonly token: boolean
  /** A cluster runner's address. */
  readonly runner?: string
}

/**
 * `baton serve`: the conversation actors behind HTTP + SSE, over the store (the home's SQLite file
 * or a PostgreSQL database), making the model calls with this process's provider settings. It runs
 * until SIGINT / SIGTERM; shutting down lets active runs reach a stop reason (bounded) before the
 * process exits.
 */
export const serve: (io: Io, banner: ServeBanner) => Effect.Effect<never, never, BatonServer> = Effect.fn("Cli.serve")(
  function*(io: Io, banner: ServeBanner) {
    const bound = yield* BatonServer
    io.err(`baton serve: ${bound.url} · ${banner.model} · conversations in ${banner.store}\n`)
    io.err(banner.token ? "  bearer token required (the token is never printed)\n" : "  no token: loopback only\n")
    if (banner.runner !== undefined) {
      io.err(`  cluster runner ${banner.runner}: conversations shared with every \`serve --cluster\` on this database\n`)
      io.err("  API: /openapi.json, docs at /docs. Ctrl-C stops it (its active runs go on at another runner).\n")
    } else {
      io.err("  API: /openapi.json, docs at /docs. Ctrl-C stops it (active runs get 10 s to finish).\n")
    }
    return yield* Effect.never
  }
)
