import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Path from "node:path"
import { ConfigError, type StoreError } from "../../domain/Errors.js"
import { ProviderInvalidRequest } from "../../domain/ProviderError.js"
import { Backend } from "../../services/Backend.js"
import type { RemoteOptions } from "../../services/backend/Remote.js"
import { layerNone as noMcpServers, McpClients, none as noMcpClients } from "../../services/McpClients.js"
import { Provider } from "../../services/Provider.js"
import { layerFromSettings } from "../../services/provider/Config.js"
import type { Credentials } from "../../services/provider/Credentials.js"
import { layerSqlite, type SqliteOptions } from "../../services/store/Sqlite.js"
import type { Store } from "../../services/Store.js"
import { ToolExecutor } from "../../services/ToolExecutor.js"
import * as ToolExecutorLive from "../../services/tools/Executor.js"
import type { ToolExecutorOptions } from "../../services/tools/Executor.js"
import { layerLocal, type LocalOptions, makeBackendLocal } from "../backend/BackendLocal.js"
import type { RunnerOptions } from "./ClusterRunner.js"
import type { BatonServer, ServeOptions, ServerStartError } from "../server/Server.js"
import type { BatonWeb, WebOptions, WebStartError } from "../web/WebServer.js"
import { DEFAULT_SYSTEM_PROMPT } from "../session/Session.js"
import { type AppEnv, conversationSettings, databaseUrl, describeProvider, providerSettings, serverToken, storeFile } from "./Env.js"
import { mcpServerConfigs } from "./McpServers.js"
import { sandboxConfig } from "./Sandboxing.js"
import { telemetryConfig } from "./TelemetryConfig.js"
import { VERSION } from "../../services/Version.js"

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
  /** The key a live model in this process sends (chat's auth lock re-reads it, `/key` sets it). */
  readonly credentials?: Credentials
}

/** For commands that make no model calls (reading conversations, a `--server` client): a call would be a bug. */
export const noModel: Layer.Layer<Provider> = Layer.succeed(Provider, Provider.of({
  stream: () => Stream.fail(new ProviderInvalidRequest({ status: 0, message: "this command makes no model calls" }))
}))

/** The model from the options, the environment and the settings files. */
export const model = (env: AppEnv): Effect.Effect<Model, ConfigError> =>
  env.args.server !== undefined
    ? Effect.succeed({ layer: noModel, describe: `the server at ${env.args.server}` })
    : Effect.map(providerSettings(env), (settings) => ({
      layer: layerFromSettings(settings),
      describe: describeProvider(settings),
      ...(settings.kind !== "replay" && settings.live.credentials !== undefined ? { credentials: settings.live.credentials } : {})
    }))

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

/** What `baton usage` and telemetry call the demo's model: a recording, no model behind it. */
export const DEMO_MODEL = "baton-demo-recording"

/** The demo's model: its cassette, paced for reading unless `fast`, under DEMO_MODEL's name. */
export const demoModel = (cassette: string, options: { readonly fast: boolean }): Layer.Layer<Provider, ConfigError> =>
  Layer.effect(Provider, Effect.map(Provider, (inner) => Provider.of({ ...inner, model: DEMO_MODEL, info: { name: "replay", model: DEMO_MODEL } }))).pipe(
    Layer.provide(options.fast ? replay(cassette) : paced(18, 500).pipe(Layer.provide(replay(cassette))))
  )

/** The home's SQLite file, as durable as the settings ask (`durability`: normal by default, or full). */
export const storeOptions = (env: AppEnv): SqliteOptions => ({ filename: storeFile(env), synchronous: env.settings.file.durability ?? "normal" })

/**
 * Where conversations live: the home's SQLite file, or the PostgreSQL database of `--database` /
 * BATON_DATABASE_URL (loaded only then: a SQLite user never loads the PostgreSQL driver; its
 * durability is the server's own `synchronous_commit`).
 */
const storeLayer = (env: AppEnv): Effect.Effect<Layer.Layer<Store, StoreError>, ConfigError> =>
  Effect.gen(function*() {
    const url = yield* databaseUrl(env)
    if (url === undefined) return layerSqlite(storeOptions(env))
    const StorePg = yield* Effect.promise(() => import("../../services/store/Pg.js"))
    return StorePg.layer({ url })
  })

/** Conversations in the store, model calls in this process. */
const localBackend = (env: AppEnv, provider: Layer.Layer<Provider, ConfigError>, options?: LocalOptions): Layer.Layer<Backend, ConfigError | StoreError> =>
  layerLocal(options).pipe(Layer.provide([Layer.unwrapEffect(storeLayer(env)), provider]))

/**
 * Where conversations and model calls live. This is the one place `--server URL` swaps the local
 * backend (the store + the provider in this process) for the remote one, and `--database URL` the
 * home's SQLite file for PostgreSQL.
 */
export const backend = (
  env: AppEnv,
  provider: Layer.Layer<Provider, ConfigError> = noModel,
  onWait?: RemoteOptions["onWait"]
): Layer.Layer<Backend, ConfigError | StoreError> => {
  const server = env.args.server
  if (server === undefined) return localBackend(env, provider)
  return Layer.unwrapEffect(Effect.gen(function*() {
    // Refuses a --database given with --server: the server decides where its conversations live.
    yield* databaseUrl(env)
    const token = yield* serverToken
    const remote = yield* Effect.promise(() => import("../../services/backend/Remote.js"))
    return remote.layerRemote({
      url: server.replace(/\/+$/, ""),
      ...(token !== undefined ? { token } : {}),
      ...(onWait !== undefined ? { onWait } : {})
    })
  }))
}

/**
 * The workspace's MCP servers (settings `mcpServers`, `.mcp.json`), started in parallel when the
 * layer is built and stopped with it; their process groups are recorded under the home, so a crashed
 * Baton's are killed at the next start. With none configured, the MCP client library never loads.
 */
export const mcpClients = (env: AppEnv): Layer.Layer<McpClients> =>
  env.settings.mcpServers.length === 0
    ? noMcpServers
    : Layer.unwrapEffect(Effect.gen(function*() {
      const servers = yield* mcpServerConfigs(env)
      const live = yield* Effect.promise(() => import("../../services/mcp/Live.js"))
      return live.layer({
        servers,
        ...(env.settings.file.mcpStartupTimeoutMs !== undefined ? { startupTimeoutMs: env.settings.file.mcpStartupTimeoutMs } : {}),
        processRegistryDir: Path.join(env.home, "processes", "mcp"),
        sandbox: sandboxConfig(env),
        clientInfo: { name: "baton", version: VERSION }
      })
    }))

/**
 * The workspace's tools: the built-ins and its MCP servers'. Shells orphaned by a crashed Baton are
 * reaped from the home's registry; Bash runs in the sandbox the options and settings ask for.
 */
export const tools = (env: AppEnv): Layer.Layer<ToolExecutor | McpClients, ConfigError> =>
  ToolExecutorLive.layerWithMcp(toolOptions(env)).pipe(Layer.provideMerge(mcpClients(env)))

const toolOptions = (env: AppEnv): Omit<ToolExecutorOptions, "mcp"> => ({
  workspace: env.workspace,
  processRegistryDir: Path.join(env.home, "processes"),
  sandbox: sandboxConfig(env),
  ...(env.settings.file.mcpToolTimeoutMs !== undefined ? { limits: { mcpTimeoutMs: env.settings.file.mcpToolTimeoutMs } } : {})
})

/** The tools of `tools` and the local backend of `backend`, made in the caller's scope. */
const toolsContext = (env: AppEnv): Effect.Effect<Context.Context<ToolExecutor | McpClients>, ConfigError, Scope.Scope> =>
  Effect.gen(function*() {
    const mcp = env.settings.mcpServers.length === 0 ? noMcpClients : Context.get(yield* Layer.build(mcpClients(env)), McpClients)
    const executor = yield* ToolExecutorLive.makeToolExecutor({ ...toolOptions(env), mcp })
    return Context.make(ToolExecutor, executor).pipe(Context.add(McpClients, mcp))
  })

const localBackendContext = (
  env: AppEnv,
  provider: Layer.Layer<Provider, ConfigError>
): Effect.Effect<Context.Context<Backend>, ConfigError | StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const ports = Context.merge(yield* Layer.build(yield* storeLayer(env)), yield* Layer.build(provider))
    return Context.make(Backend, yield* Effect.provide(makeBackendLocal(), ports))
  })

/**
 * Backend + tools for a task command, with this model. Locally, one layer whose parts are made as
 * effects side by side: as a tree of layers (a memo-map entry, a scope and a fiber per merged branch
 * each) they cost ~7,700 Effect steps and 38 fibers before the first request, now ~3,500 and 4.
 */
export const task = (
  env: AppEnv,
  provider: Layer.Layer<Provider, ConfigError>,
  onWait?: RemoteOptions["onWait"]
): Layer.Layer<Backend | ToolExecutor | McpClients, ConfigError | StoreError> =>
  env.args.server !== undefined
    ? Layer.merge(backend(env, provider, onWait), tools(env))
    : Layer.scopedContext(Effect.map(
      Effect.all([localBackendContext(env, provider), toolsContext(env)], { concurrency: 2 }),
      ([backend, tools]) => Context.merge(backend, tools)
    ))

/**
 * Telemetry, from the standard OTEL_* variables (TelemetryConfig.ts): spans (and, for `baton serve`,
 * metrics) exported over OTLP/HTTP. With none set, nothing is installed and the exporter's modules
 * never load: a command pays one look at the environment.
 */
export const telemetry = (options: { readonly metrics: boolean }): Layer.Layer<never, ConfigError> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const config = yield* telemetryConfig(options)
    if (config === undefined) return Layer.empty
    const otlp = yield* Effect.promise(() => import("../../services/telemetry/Otlp.js"))
    return otlp.layer({ ...config, serviceVersion: VERSION })
  }))

/** What every `baton serve` takes from the environment: new conversations' defaults and the pricing of `GET /v1/usage`. */
const servedWith = (env: AppEnv, options: ServeOptions): ServeOptions => ({
  conversationDefaults: { system_prompt: DEFAULT_SYSTEM_PROMPT, ...conversationSettings(env) },
  ...(env.settings.file.pricing !== undefined ? { pricing: env.settings.file.pricing } : {}),
  ...options
})

/** `baton serve --cluster`: one runner of the cluster (ClusterRunner.ts), with this model, behind HTTP + SSE. */
export const clusterServer = (
  env: AppEnv,
  provider: Layer.Layer<Provider, ConfigError>,
  options: ServeOptions,
  runnerOptions: RunnerOptions
): Layer.Layer<BatonServer, ServerStartError | ConfigError | StoreError> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const server = yield* Effect.promise(() => import("../server/Server.js"))
    const { layerRunner, RunnerStatus } = yield* Effect.promise(() => import("./ClusterRunner.js"))
    return Layer.unwrapEffect(Effect.map(RunnerStatus, (status) =>
      server.serve({
        ...servedWith(env, options),
        runner: Effect.map(status.shards, (shards) => ({ address: status.address, shards }))
      }))).pipe(Layer.provide(layerRunner(runnerOptions)), Layer.provide(provider))
  }))

/** `baton serve`: the local backend over the store (the home's SQLite file or `--database`), with this model, behind HTTP + SSE. */
export const server = (
  env: AppEnv,
  provider: Layer.Layer<Provider, ConfigError>,
  options: ServeOptions,
  local?: LocalOptions
): Layer.Layer<BatonServer, ServerStartError | ConfigError | StoreError> =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.promise(() => import("../server/Server.js")),
      (server) => server.serve(servedWith(env, options)).pipe(Layer.provide(localBackend(env, provider, local)))
    )
  )

/** `baton web`: the session host and its page over the usual backend (local, or `--server`) and the workspace's tools. */
export const web = (
  env: AppEnv,
  provider: Layer.Layer<Provider, ConfigError>,
  options: WebOptions
): Layer.Layer<BatonWeb, WebStartError | ConfigError | StoreError> =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.promise(() => import("../web/WebServer.js")),
      (webServer) => webServer.serveWeb(options).pipe(Layer.provide(task(env, provider)))
    )
  )
