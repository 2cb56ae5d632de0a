import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import type * as Command from "@effect/cli/Command"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { APPROVE_MODES, type CommonArgs, PROVIDER_KINDS, SANDBOX_MODES } from "./CommonArgs.js"

/*
 * The options every task command shares (run, chat, replay, web), and how they become CommonArgs.
 * Kept apart from Cli.ts's command tree; like it, this module loads only @effect/cli and effect.
 */

/** An optional option that falls back to an environment variable (read through Effect Config). */
const fromEnv = <A>(option: Options.Options<A>, variable: string, config: Config.Config<A>, description: string) =>
  option.pipe(Options.withFallbackConfig(config), Options.withDescription(`${description} (${variable})`), Options.optional)

export const providerOption = fromEnv(
  Options.choice("provider", PROVIDER_KINDS),
  "BATON_PROVIDER",
  Config.literal(...PROVIDER_KINDS)("BATON_PROVIDER"),
  "Model API: openai-chat (also Ollama, vLLM, llama.cpp), anthropic, openai-responses, or replay"
)
export const modelOption = fromEnv(Options.text("model").pipe(Options.withPseudoName("NAME")), "BATON_MODEL", Config.string("BATON_MODEL"), "Model name")
export const baseUrlOption = fromEnv(
  Options.text("base-url").pipe(Options.withPseudoName("URL")),
  "BATON_BASE_URL",
  Config.string("BATON_BASE_URL"),
  "API base URL, e.g. http://127.0.0.1:11434/v1 for Ollama"
)
export const homeOption = fromEnv(Options.text("home").pipe(Options.withPseudoName("DIR")), "BATON_HOME", Config.string("BATON_HOME"), "Where conversations and settings live, default ~/.baton")
export const databaseOption = Options.redacted("database").pipe(
  Options.withPseudoName("URL"),
  Options.withFallbackConfig(Config.redacted("BATON_DATABASE_URL")),
  Options.withDescription(
    "Keep conversations in this PostgreSQL database (postgres://user:password@host:5432/db) instead of the home's baton.db (BATON_DATABASE_URL); never printed"
  ),
  Options.optional
)
export const serverOption = Options.text("server").pipe(
  Options.withPseudoName("URL"),
  Options.withDescription("Use a `baton serve` backend at this URL instead of the local one (token: BATON_TOKEN)"),
  Options.optional
)

export const sandboxOption = fromEnv(
  Options.choice("sandbox", SANDBOX_MODES).pipe(Options.withPseudoName("MODE")),
  "BATON_SANDBOX",
  Config.literal(...SANDBOX_MODES)("BATON_SANDBOX"),
  "Where Bash commands run: workspace-write (default where bubblewrap or sandbox-exec is available: only the workspace writable, " +
    "secrets hidden, no network), read-only, or off (your full rights); overrides settings sandbox.mode"
)

export const noProjectInstructionsOption = Options.boolean("no-project-instructions").pipe(
  Options.withDescription("Start a new conversation without the AGENTS.md / CLAUDE.md files in its system prompt")
)

/** An integer option's lower bound, refused as a usage error naming the option. */
const atLeast = (option: string, min: number) => (n: number) =>
  n >= min ? Effect.succeed(n) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`${option} expects a whole number of at least ${min}, got '${n}'`)))

/** The options of every task command. */
export const common = {
  provider: providerOption,
  model: modelOption,
  baseUrl: baseUrlOption,
  workspace: Options.text("workspace").pipe(Options.withPseudoName("DIR"), Options.withAlias("w"), Options.withDescription("The directory the tools work in (default: the current one)"), Options.optional),
  conversation: Options.text("conversation").pipe(Options.withPseudoName("ID"), Options.withDescription("Continue this conversation (an id from `baton sessions list`)"), Options.optional),
  continue: Options.boolean("continue").pipe(Options.withAlias("c"), Options.withDescription("Continue the latest conversation of this workspace")),
  approve: Options.choice("approve", APPROVE_MODES).pipe(
    Options.withDescription("Calls the rules leave open: ask (prompt; denied when stdin is not a terminal), allow, or deny"),
    Options.optional
  ),
  maxTurns: Options.integer("max-turns").pipe(
    Options.withPseudoName("N"),
    Options.withDescription("Stop a task after this many model turns (at least 1)"),
    Options.mapEffect(atLeast("--max-turns", 1)),
    Options.optional
  ),
  home: homeOption,
  database: databaseOption,
  server: serverOption,
  sandbox: sandboxOption,
  noProjectInstructions: noProjectInstructionsOption
}

export const toArgs = (parsed: Command.Command.ParseConfig<typeof common>): CommonArgs => ({
  provider: Option.getOrUndefined(parsed.provider),
  model: Option.getOrUndefined(parsed.model),
  baseUrl: Option.getOrUndefined(parsed.baseUrl),
  workspace: Option.getOrUndefined(parsed.workspace),
  conversation: Option.getOrUndefined(parsed.conversation),
  continue: parsed.continue,
  approve: Option.getOrUndefined(parsed.approve),
  maxTurns: Option.getOrUndefined(parsed.maxTurns),
  home: Option.getOrUndefined(parsed.home),
  database: Option.getOrUndefined(parsed.database),
  server: Option.getOrUndefined(parsed.server),
  sandbox: Option.getOrUndefined(parsed.sandbox),
  projectInstructions: !parsed.noProjectInstructions
})
