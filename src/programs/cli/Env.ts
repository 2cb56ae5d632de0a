import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as Os from "node:os"
import * as Path from "node:path"
import type { ConversationSettingsInput } from "../../domain/Conversation.js"
import { ConfigError, type StoreError } from "../../domain/Errors.js"
import { ProviderInvalidRequest } from "../../domain/ProviderError.js"
import { emptyRules } from "../../domain/Settings.js"
import type { Backend } from "../../services/Backend.js"
import { layerLocal } from "../backend/BackendLocal.js"
import { layerRemote } from "../../services/backend/Remote.js"
import { Provider } from "../../services/Provider.js"
import { layerFromSettings, type ProviderSettings, resolveProviderSettings } from "../../services/provider/Config.js"
import { layerSqlite } from "../../services/store/Sqlite.js"
import type { ToolExecutor } from "../../services/ToolExecutor.js"
import * as ToolExecutorLive from "../../services/tools/Executor.js"
import { resolveWorkspace } from "../../services/tools/Workspace.js"
import type { CommonArgs } from "./CommonArgs.js"
import { type LoadedSettings, loadSettings } from "./LoadSettings.js"

/** Where a command runs: the resolved home and workspace, the settings files in force, its options. */
export interface AppEnv {
  readonly home: string
  /** Absolute and real (symlinks resolved), as the ToolExecutor and `--continue` see it. */
  readonly workspace: string
  readonly settings: LoadedSettings
  readonly args: CommonArgs
}

export const defaultHome = (): string => Path.join(Os.homedir(), ".baton")

/** `cwd` is the workspace when `--workspace` is absent. */
export const resolveEnv = (args: CommonArgs, cwd: string): Effect.Effect<AppEnv, ConfigError> =>
  Effect.gen(function*() {
    const home = Path.resolve(args.home ?? defaultHome())
    // Real (symlinks resolved), as the ToolExecutor and conversations record it.
    const workspace = yield* resolveWorkspace(args.workspace ?? cwd)
    const settings = yield* loadSettings(home, workspace)
    return { home, workspace, settings, args }
  })

/** For commands that only read conversations: the home, and nothing from the workspace. */
export const storeEnv = (args: CommonArgs, cwd: string): AppEnv => ({
  home: Path.resolve(args.home ?? defaultHome()),
  workspace: cwd,
  settings: { file: {}, rules: emptyRules, sources: [] },
  args
})

const PROVIDER_HELP = [
  "  Configure a model with BATON_PROVIDER (openai-chat | anthropic | openai-responses), BATON_MODEL and BATON_API_KEY",
  "  (or OPENAI_API_KEY / ANTHROPIC_API_KEY), or with --provider, --model and --base-url, or in settings.json.",
  "  To see Baton work without a key or a network: baton demo"
].join("\n")

/** The model configuration: options over the environment over the settings files. */
export const providerSettings = (env: AppEnv): Effect.Effect<ProviderSettings, ConfigError> =>
  resolveProviderSettings(
    { provider: env.args.provider, model: env.args.model, baseUrl: env.args.baseUrl },
    { provider: env.settings.file.provider, model: env.settings.file.model, baseUrl: env.settings.file.baseUrl }
  ).pipe(Effect.mapError((e) => new ConfigError({ ...e, message: `${e.message}\n${PROVIDER_HELP}` })))

export const describeProvider = (settings: ProviderSettings): string =>
  settings.kind === "replay" ? `replay of ${Path.basename(settings.cassette)}` : `${settings.live.model} via ${settings.kind}`

/** The model a task command uses, and how to name it. With `--server` the server makes the model calls. */
export interface Model {
  readonly layer: Layer.Layer<Provider, ConfigError>
  readonly describe: string
}

export const modelFor = (env: AppEnv): Effect.Effect<Model, ConfigError> =>
  env.args.server !== undefined
    ? Effect.succeed({ layer: noModel, describe: `the server at ${env.args.server}` })
    : Effect.map(providerSettings(env), (settings) => ({ layer: layerFromSettings(settings), describe: describeProvider(settings) }))

/** For commands that only read conversations: a model call would be a bug. */
const noModel = Layer.succeed(Provider, Provider.of({
  stream: () => Stream.fail(new ProviderInvalidRequest({ status: 0, message: "this command makes no model calls" }))
}))

export const storeFile = (env: AppEnv) => Path.join(env.home, "baton.db")

/**
 * Where conversations and model calls live. This is the one place `--server URL` swaps the local
 * backend (SQLite under the home + the provider in this process) for the remote one.
 */
export const backendLayer = (env: AppEnv, provider: Layer.Layer<Provider, ConfigError> | undefined): Layer.Layer<Backend, ConfigError | StoreError> => {
  const server = env.args.server
  if (server !== undefined) {
    return Layer.unwrapEffect(
      Effect.map(serverToken, (token) => layerRemote({ url: server.replace(/\/+$/, ""), ...(token !== undefined ? { token } : {}) }))
    )
  }
  return layerLocal().pipe(Layer.provide([layerSqlite({ filename: storeFile(env) }), provider ?? noModel]))
}

/** The bearer token for `--server`, only ever from the environment. */
export const serverToken: Effect.Effect<Redacted.Redacted<string> | undefined, ConfigError> = Config.option(Config.redacted("BATON_TOKEN")).pipe(
  Effect.map(Option.getOrUndefined),
  Effect.mapError((e) => new ConfigError({ source: "BATON_TOKEN", message: String(e) }))
)

/** The workspace's tools; shells orphaned by a crashed Baton are reaped from the home's registry. */
export const toolsLayer = (env: AppEnv): Layer.Layer<ToolExecutor, ConfigError> =>
  ToolExecutorLive.layer({ workspace: env.workspace, processRegistryDir: Path.join(env.home, "processes") })

/** Backend + tools for a task command, with this model. */
export const taskLayer = (env: AppEnv, provider: Layer.Layer<Provider, ConfigError>): Layer.Layer<Backend | ToolExecutor, ConfigError | StoreError> =>
  Layer.merge(backendLayer(env, provider), toolsLayer(env))

/** What a new conversation starts with, from the settings files. */
export const conversationSettings = (env: AppEnv): Omit<ConversationSettingsInput, "tools" | "workspace"> => ({
  ...(env.settings.file.systemPrompt !== undefined ? { system_prompt: env.settings.file.systemPrompt } : {}),
  ...(env.settings.file.compaction !== undefined ? { compaction: env.settings.file.compaction } : {})
})

export const maxTurns = (env: AppEnv): number | undefined => env.args.maxTurns ?? env.settings.file.maxTurns
