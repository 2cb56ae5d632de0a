import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as Path from "node:path"
import type { ConfigError, StoreError } from "../../domain/Errors.js"
import { ProviderInvalidRequest } from "../../domain/ProviderError.js"
import type { Backend } from "../../services/Backend.js"
import { Provider } from "../../services/Provider.js"
import { layerFromSettings } from "../../services/provider/Config.js"
import { layerSqlite } from "../../services/store/Sqlite.js"
import type { ToolExecutor } from "../../services/ToolExecutor.js"
import * as ToolExecutorLive from "../../services/tools/Executor.js"
import { layerLocal } from "../backend/BackendLocal.js"
import type { BatonServer, ServeOptions, ServerStartError } from "../server/Server.js"
import { type AppEnv, describeProvider, providerSettings, serverToken, storeFile } from "./Env.js"

/**
 * The CLI's composition root: the one module that turns an environment (AppEnv: home, workspace,
 * settings, options) into layers. Programs only name the services they need in their type;
 * Commands.ts provides them from here, per command. The remote client and the server (its HTTP API,
 * router and the /docs page, most of the bundle) load only when a command uses them.
 */

/** The model a task command uses, and how to name it. With `--server` the server makes the model calls. */
export interface Model {
  readonly layer: Layer.Layer<Provider, ConfigError>
  readonly describe: string
}

/** For commands that make no model calls (reading conversations, a `--server` client): a call would be a bug. */
export const noModel: Layer.Layer<Provider> = Layer.succeed(Provider, Provider.of({
  stream: () => Stream.fail(new ProviderInvalidRequest({ status: 0, message: "this command makes no model calls" }))
}))

/** The model from the options, the environment and the settings files. */
export const model = (env: AppEnv): Effect.Effect<Model, ConfigError> =>
  env.args.server !== undefined
    ? Effect.succeed({ layer: noModel, describe: `the server at ${env.args.server}` })
    : Effect.map(providerSettings(env), (settings) => ({ layer: layerFromSettings(settings), describe: describeProvider(settings) }))

/** A recorded model: the cassette's responses, matched by what the model was sent. */
export const replay = (cassette: string): Layer.Layer<Provider, ConfigError> => layerFromSettings({ kind: "replay", cassette })

/** Streams at a readable pace on a terminal: a recording would otherwise flash by in a few milliseconds. */
export const paced = (deltaMs: number, firstMs: number): Layer.Layer<Provider, never, Provider> =>
  Layer.effect(Provider, Effect.map(Provider, (inner) =>
    Provider.of({
      stream: (request) =>
        Stream.concat(
          Stream.execute(Effect.sleep(firstMs)),
          inner.stream(request).pipe(
            Stream.tap((event) => (event._tag === "TextDelta" || event._tag === "ReasoningDelta" ? Effect.sleep(deltaMs) : Effect.void))
          )
        )
    })))

/** The demo's model: its cassette, paced for reading unless `fast`. */
export const demoModel = (cassette: string, options: { readonly fast: boolean }): Layer.Layer<Provider, ConfigError> =>
  options.fast ? replay(cassette) : paced(18, 500).pipe(Layer.provide(replay(cassette)))

/** Conversations in the home's SQLite file, model calls in this process. */
const localBackend = (env: AppEnv, provider: Layer.Layer<Provider, ConfigError>): Layer.Layer<Backend, ConfigError | StoreError> =>
  layerLocal().pipe(Layer.provide([layerSqlite({ filename: storeFile(env) }), provider]))

/**
 * Where conversations and model calls live. This is the one place `--server URL` swaps the local
 * backend (SQLite under the home + the provider in this process) for the remote one.
 */
export const backend = (env: AppEnv, provider: Layer.Layer<Provider, ConfigError> = noModel): Layer.Layer<Backend, ConfigError | StoreError> => {
  const server = env.args.server
  if (server === undefined) return localBackend(env, provider)
  return Layer.unwrapEffect(
    Effect.zipWith(
      Effect.promise(() => import("../../services/backend/Remote.js")),
      serverToken,
      (remote, token) => remote.layerRemote({ url: server.replace(/\/+$/, ""), ...(token !== undefined ? { token } : {}) })
    )
  )
}

/** The workspace's tools; shells orphaned by a crashed Baton are reaped from the home's registry. */
export const tools = (env: AppEnv): Layer.Layer<ToolExecutor, ConfigError> =>
  ToolExecutorLive.layer({ workspace: env.workspace, processRegistryDir: Path.join(env.home, "processes") })

/** Backend + tools for a task command, with this model. */
export const task = (env: AppEnv, provider: Layer.Layer<Provider, ConfigError>): Layer.Layer<Backend | ToolExecutor, ConfigError | StoreError> =>
  Layer.merge(backend(env, provider), tools(env))

/** `baton serve`: the local backend over the home's SQLite file, with this model, behind HTTP + SSE. */
export const server = (
  env: AppEnv,
  provider: Layer.Layer<Provider, ConfigError>,
  options: ServeOptions
): Layer.Layer<BatonServer, ServerStartError | ConfigError | StoreError> =>
  Layer.unwrapEffect(
    Effect.map(Effect.promise(() => import("../server/Server.js")), (server) => server.serve(options).pipe(Layer.provide(localBackend(env, provider))))
  )
