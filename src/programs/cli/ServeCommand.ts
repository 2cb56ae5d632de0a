import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import { layerLocal } from "../backend/BackendLocal.js"
import { layerSqlite } from "../../services/store/Sqlite.js"
import { modelFor, resolveEnv, serverToken, storeFile } from "./Env.js"
import type { CommonArgs } from "./CommonArgs.js"
import type { Io } from "./Io.js"
import { BatonServer, serve as serveLayer } from "../server/Server.js"

export interface ServeCommandOptions {
  readonly host: string | undefined
  readonly port: number | undefined
  /** From `--token`; BATON_TOKEN is read when it is absent. */
  readonly token: Redacted.Redacted<string> | undefined
}

/**
 * `baton serve`: the conversation actors behind HTTP + SSE, over the home's SQLite file, making the
 * model calls with this process's provider settings. It runs until SIGINT / SIGTERM; shutting down
 * lets active runs reach a stop reason (bounded) before the process exits.
 */
export const serve = (io: Io, args: CommonArgs, options: ServeCommandOptions) =>
  Effect.gen(function*() {
    const env = yield* resolveEnv({ ...args, server: undefined }, io.cwd())
    const model = yield* modelFor(env)
    const token = options.token ?? (yield* serverToken)
    const server = serveLayer({
      ...(options.host !== undefined ? { host: options.host } : {}),
      ...(options.port !== undefined ? { port: options.port } : {}),
      ...(token !== undefined ? { token } : {})
    }).pipe(
      Layer.provide(layerLocal()),
      Layer.provide([model.layer, layerSqlite({ filename: storeFile(env) })])
    )
    yield* Effect.gen(function*() {
      const bound = yield* BatonServer
      io.err(`baton serve: ${bound.url} · ${model.describe} · conversations in ${storeFile(env)}\n`)
      io.err(token !== undefined ? "  bearer token required (the token is never printed)\n" : "  no token: loopback only\n")
      io.err("  API: /openapi.json, docs at /docs. Ctrl-C stops it (active runs get 10 s to finish).\n")
      return yield* Effect.never
    }).pipe(Effect.provide(server))
  })
