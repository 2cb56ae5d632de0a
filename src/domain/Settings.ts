import { Schema } from "effect"
import { CompactionMode } from "./Events.js"
import { McpServers } from "./McpConfig.js"
import { SandboxSettings } from "./Sandbox.js"
import { Agents } from "./Subagents.js"
import { Pricing } from "./Usage.js"

export const DEFAULT_COMPACTION_PROMPT = [
  "Your context window is nearly full, so this conversation will continue in a fresh context.",
  "Write a summary that lets you continue the task without the history above. Include:",
  "- the user's goal and every explicit instruction or constraint they gave;",
  "- what has been done so far: files read or changed (with paths), commands run and their outcomes;",
  "- the current state: what works, what is broken, open errors;",
  "- the next steps you were about to take.",
  "Do not call any tool. Reply with the summary only, wrapped exactly as [summary]…[/summary]."
].join("\n")

/** Compaction settings; decoding `{}` yields the defaults. */
export const CompactionSettings = Schema.Struct({
  /** Compact when the last request's total tokens reach this; ≤ 0 disables. */
  maxContextLength: Schema.optionalWith(Schema.Int, { default: () => 128_000 }),
  /** Compact when the session's turns reach this; -1 never. */
  maxSessionTurns: Schema.optionalWith(Schema.Int, { default: () => -1 }),
  mode: Schema.optionalWith(CompactionMode, { default: () => "summarize" as const }),
  prompt: Schema.optionalWith(Schema.String, { default: () => DEFAULT_COMPACTION_PROMPT }),
  /** The model's context window for the pre-flight check; defaults to maxContextLength. */
  contextWindow: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }),
  /** What one image costs in the pre-flight estimate, in tokens; defaults to the provider's (DEFAULT_IMAGE_TOKENS). */
  imageTokens: Schema.optionalWith(Schema.NonNegativeInt, { exact: true })
})
export type CompactionSettings = typeof CompactionSettings.Type

export const defaultCompactionSettings: CompactionSettings = Schema.decodeUnknownSync(CompactionSettings)({})

/** Reconnect schedule inside one run: min(baseMs · 2^n, capMs), at most `retries` times. */
export const ReconnectSettings = Schema.Struct({
  retries: Schema.optionalWith(Schema.NonNegativeInt, { default: () => 5 }),
  baseMs: Schema.optionalWith(Schema.NonNegativeInt, { default: () => 250 }),
  capMs: Schema.optionalWith(Schema.NonNegativeInt, { default: () => 30_000 })
})
export type ReconnectSettings = typeof ReconnectSettings.Type

export const defaultReconnectSettings: ReconnectSettings = Schema.decodeUnknownSync(ReconnectSettings)({})

export const DEFAULT_COMPACTION_RECONNECTS = 3
export const DEFAULT_MAX_TURNS = 100
/** How long one MCP tool call may run before it is cancelled with an error result. */
export const DEFAULT_MCP_TOOL_TIMEOUT_MS = 600_000
/** How long an MCP server has to start and list its tools before it is given up for this session. */
export const DEFAULT_MCP_STARTUP_TIMEOUT_MS = 30_000

/** Permission rules as users write them: `Read`, `Bash(git status:*)`, `Edit(src/**)`. */
export const PermissionRules = Schema.Struct({
  allow: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  ask: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  deny: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  /** Directories outside the workspace that file tools may touch. */
  additionalDirectories: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] })
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type PermissionRules = typeof PermissionRules.Type

export const emptyRules: PermissionRules = { allow: [], ask: [], deny: [], additionalDirectories: [] }

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const ProviderKind = Schema.Literal("openai-chat", "anthropic", "openai-responses", "replay")
export type ProviderKind = typeof ProviderKind.Type

/**
 * One settings file (`$BATON_HOME/settings.json`, `<workspace>/.baton/settings.json`).
 * Every key is optional; unknown keys are errors so a typo cannot silently drop a deny rule.
 * API keys are deliberately absent: they live only in the environment.
 */
export const SettingsFile = Schema.Struct({
  $schema: Schema.optionalWith(Schema.String, { exact: true }),
  model: Schema.optionalWith(Schema.NonEmptyString, { exact: true }),
  provider: Schema.optionalWith(ProviderKind, { exact: true }),
  baseUrl: Schema.optionalWith(Schema.NonEmptyString, { exact: true }),
  systemPrompt: Schema.optionalWith(Schema.String, { exact: true }),
  /** false: a new conversation's system prompt leaves out the AGENTS.md / CLAUDE.md files (default true). */
  projectInstructions: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /** USD per million tokens by model, for `baton usage` and `GET /v1/usage`: `{ "MODEL": { "input", "output", "cacheRead"?, "cacheWrite"? } }`. */
  pricing: Schema.optionalWith(Pricing, { exact: true }),
  /** Claude Code's convention: a shell command whose stdout is the API key (run at start and after the key is refused). */
  apiKeyHelper: Schema.optionalWith(Schema.NonEmptyString, { exact: true }),
  permissions: Schema.optionalWith(
    Schema.Struct({
      allow: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
      ask: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
      deny: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
      additionalDirectories: Schema.optionalWith(Schema.Array(Schema.String), { exact: true })
    }).annotations(strict),
    { exact: true }
  ),
  compaction: Schema.optionalWith(
    Schema.Struct({
      maxContextLength: Schema.optionalWith(Schema.Int, { exact: true }),
      maxSessionTurns: Schema.optionalWith(Schema.Int, { exact: true }),
      mode: Schema.optionalWith(CompactionMode, { exact: true }),
      prompt: Schema.optionalWith(Schema.String, { exact: true }),
      contextWindow: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }),
      imageTokens: Schema.optionalWith(Schema.NonNegativeInt, { exact: true })
    }).annotations(strict),
    { exact: true }
  ),
  maxTurns: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }),
  /** MCP servers by name; a workspace's `.mcp.json` adds its own, and a later file's entry replaces an earlier one. */
  mcpServers: Schema.optionalWith(McpServers, { exact: true }),
  mcpToolTimeoutMs: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }),
  mcpStartupTimeoutMs: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }),
  /** Subagent types the `Task` tool may start, by name; a later file's entry replaces an earlier one. */
  agents: Schema.optionalWith(Agents, { exact: true }),
  /**
   * How hard the conversation store holds a commit. `normal` (default, SQLite synchronous=NORMAL):
   * every commit survives a killed or crashed process. `full` (synchronous=FULL): it also survives a
   * power cut or an OS crash, at one fsync per commit.
   */
  durability: Schema.optionalWith(Schema.Literal("normal", "full"), { exact: true }),
  /** Where Bash commands run: `{ mode, network, writable, hidden }` (Sandbox.ts); merged key by key, lists concatenated. */
  sandbox: Schema.optionalWith(SandboxSettings, { exact: true })
}).annotations(strict)
export type SettingsFile = typeof SettingsFile.Type
