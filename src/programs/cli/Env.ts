import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Os from "node:os"
import * as Path from "node:path"
import type { ConversationSettingsInput } from "../../domain/Conversation.js"
import { ConfigError } from "../../domain/Errors.js"
import { emptyRules } from "../../domain/Settings.js"
import { type ProviderSettings, resolveProviderSettings } from "../../services/provider/Config.js"
import { isPostgresUrl, redactUrl } from "../../services/store/pg/Url.js"
import { resolveWorkspace } from "../../services/tools/Workspace.js"
import type { CommonArgs } from "./CommonArgs.js"
import { type LoadedSettings, loadSettings } from "./LoadSettings.js"
import { DEFAULT_SYSTEM_PROMPT } from "../session/Session.js"
import { findInstructions, type InstructionFile, withInstructions } from "./ProjectInstructions.js"

/** Where a command runs: the resolved home and workspace, the settings files in force, its options. */
export interface AppEnv {
  readonly home: string
  /** Absolute and real (symlinks resolved), as the ToolExecutor and `--continue` see it. */
  readonly workspace: string
  readonly settings: LoadedSettings
  readonly args: CommonArgs
  /** The project instruction files a new conversation's system prompt gets (none when turned off). */
  readonly instructions: ReadonlyArray<InstructionFile>
}

export const defaultHome = (): string => Path.join(Os.homedir(), ".baton")

const noSettings: LoadedSettings = { file: {}, rules: emptyRules, sources: [], mcpServers: [] }

/** `cwd` is the workspace when `--workspace` is absent. */
export const resolveEnv = (args: CommonArgs, cwd: string): Effect.Effect<AppEnv, ConfigError> =>
  Effect.gen(function*() {
    // Checked before anything opens the store: a blank id must not leave a store file behind.
    if (args.conversation !== undefined && args.conversation.trim() === "") {
      return yield* new ConfigError({ source: "--conversation", field: "conversation", message: "--conversation needs a conversation id" })
    }
    const home = Path.resolve(args.home ?? defaultHome())
    // Real (symlinks resolved), as the ToolExecutor and conversations record it.
    const workspace = yield* resolveWorkspace(args.workspace ?? cwd)
    const settings = yield* loadSettings(home, workspace)
    const instructions = args.projectInstructions && settings.file.projectInstructions !== false
      ? yield* findInstructions(home, workspace)
      : []
    return { home, workspace, settings, args, instructions }
  })

/** For commands that only read conversations: the home, and nothing from the workspace. */
export const storeEnv = (args: CommonArgs, cwd: string): AppEnv => ({
  home: Path.resolve(args.home ?? defaultHome()),
  workspace: cwd,
  settings: noSettings,
  args,
  instructions: []
})

/** A home and a workspace made for the occasion (the demo's), with no settings files and no options. */
export const freshEnv = (dirs: { readonly home: string; readonly workspace: string }, args: CommonArgs): AppEnv => ({
  home: dirs.home,
  workspace: dirs.workspace,
  settings: noSettings,
  args,
  instructions: []
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
    {
      provider: env.settings.file.provider,
      model: env.settings.file.model,
      baseUrl: env.settings.file.baseUrl,
      apiKeyHelper: env.settings.file.apiKeyHelper,
      helperCwd: env.workspace
    }
  ).pipe(Effect.mapError((e) => new ConfigError({ ...e, message: `${e.message}\n${PROVIDER_HELP}` })))

export const describeProvider = (settings: ProviderSettings): string =>
  settings.kind === "replay" ? `replay of ${Path.basename(settings.cassette)}` : `${settings.live.model} via ${settings.kind}`

export const storeFile = (env: AppEnv) => Path.join(env.home, "baton.db")

/** Where conversations live, as messages name it: the database URL without its password, or the file. */
export const storeLabel = (env: AppEnv): string =>
  env.args.database !== undefined ? redactUrl(Redacted.value(env.args.database)) : storeFile(env)

/**
 * The PostgreSQL URL of `--database` / BATON_DATABASE_URL, checked: a URL of another kind, or one
 * given to a `--server` client (which keeps no conversations), is a usage error. Never shown: it
 * may hold a password.
 */
export const databaseUrl = (env: AppEnv): Effect.Effect<Redacted.Redacted<string> | undefined, ConfigError> => {
  const database = env.args.database
  if (database === undefined) return Effect.succeed(undefined)
  const source = "--database / BATON_DATABASE_URL"
  if (env.args.server !== undefined) {
    return Effect.fail(new ConfigError({
      source,
      message: `${source}: a --server client keeps no conversations; give the database to the server (baton serve --database …)`
    }))
  }
  const url = Redacted.value(database)
  if (!isPostgresUrl(url)) {
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url.trim())?.[1]
    return Effect.fail(new ConfigError({
      source,
      message: `${source} takes a PostgreSQL URL, postgres://user:password@host:5432/database (got ${
        scheme !== undefined ? `a ${scheme}:// URL` : "something that is not a URL"
      }; not shown, it may hold a password). Without it conversations stay in ${storeFile(env)}.`
    }))
  }
  return Effect.succeed(database)
}

/** The bearer token for `--server` (and `baton serve` without `--token`), only ever from the environment. */
export const serverToken: Effect.Effect<Redacted.Redacted<string> | undefined, ConfigError> = Config.option(Config.redacted("BATON_TOKEN")).pipe(
  Effect.map(Option.getOrUndefined),
  Effect.mapError((e) => new ConfigError({ source: "BATON_TOKEN", message: String(e) }))
)

/** What a new conversation starts with, from the settings files. */
export const conversationSettings = (env: AppEnv): Omit<ConversationSettingsInput, "tools" | "workspace"> => ({
  ...(env.instructions.length > 0
    ? { system_prompt: withInstructions(env.settings.file.systemPrompt ?? DEFAULT_SYSTEM_PROMPT, env.instructions) }
    : env.settings.file.systemPrompt !== undefined
    ? { system_prompt: env.settings.file.systemPrompt }
    : {}),
  ...(env.settings.file.compaction !== undefined ? { compaction: env.settings.file.compaction } : {})
})

export const maxTurns = (env: AppEnv): number | undefined => env.args.maxTurns ?? env.settings.file.maxTurns
