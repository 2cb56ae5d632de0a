import type * as Redacted from "effect/Redacted"
import type { SandboxMode } from "../../domain/Sandbox.js"
import type { ProviderKind } from "../../domain/Settings.js"

export type { ProviderKind }

/** ProviderKind's values, spelled out so the command definitions need no Schema at start-up. */
export const PROVIDER_KINDS = ["openai-chat", "anthropic", "openai-responses", "replay"] as const satisfies ReadonlyArray<ProviderKind>

/** SandboxMode's values, spelled out for the same reason. */
export const SANDBOX_MODES = ["workspace-write", "read-only", "off"] as const satisfies ReadonlyArray<SandboxMode>

export const APPROVE_MODES = ["ask", "allow", "deny"] as const
export type ApproveMode = (typeof APPROVE_MODES)[number]

/** The options every task command shares, already merged with their environment variables. */
export interface CommonArgs {
  readonly provider: ProviderKind | undefined
  readonly model: string | undefined
  readonly baseUrl: string | undefined
  readonly workspace: string | undefined
  readonly conversation: string | undefined
  readonly continue: boolean
  readonly approve: ApproveMode | undefined
  readonly maxTurns: number | undefined
  readonly home: string | undefined
  /** A PostgreSQL URL (`--database`, BATON_DATABASE_URL): conversations there, not in the home's baton.db. */
  readonly database: Redacted.Redacted<string> | undefined
  readonly server: string | undefined
  /** `--sandbox` / BATON_SANDBOX: overrides the settings' `sandbox.mode`. */
  readonly sandbox: SandboxMode | undefined
  /** Whether a new conversation's system prompt gets the AGENTS.md / CLAUDE.md files (`--no-project-instructions` turns it off). */
  readonly projectInstructions: boolean
}

export const noCommonArgs: CommonArgs = {
  provider: undefined,
  model: undefined,
  baseUrl: undefined,
  workspace: undefined,
  conversation: undefined,
  continue: false,
  approve: undefined,
  maxTurns: undefined,
  home: undefined,
  database: undefined,
  server: undefined,
  sandbox: undefined,
  projectInstructions: false
}
