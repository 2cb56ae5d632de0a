import * as Either from "effect/Either"
import { classify, parseRules } from "../../domain/Permissions.js"
import { SANDBOXED_RULE, type SandboxStatus } from "../../domain/Sandbox.js"
import type { PermissionRules } from "../../domain/Settings.js"
import type { SandboxConfig } from "../../services/Sandbox.js"
import type { AppEnv } from "./Env.js"

/**
 * The sandbox Bash commands (and MCP servers marked `sandbox: true`) run in, from `--sandbox` /
 * BATON_SANDBOX and the settings' `sandbox`. With neither naming a mode, workspace-write is the
 * default where a sandbox is available, and off (said once) where none is; a mode the user chose is
 * kept even then, and every Bash call is asked.
 */
export const sandboxConfig = (env: AppEnv): SandboxConfig => {
  const settings = env.settings.file.sandbox
  const chosen = env.args.sandbox ?? settings?.mode
  const rules = Either.getOrUndefined(parseRules(env.settings.rules))
  // Only a rule that names the file shows a workspace `.env` to sandboxed commands, not a plain `Read`.
  const naming = rules === undefined ? undefined : { ...rules, allow: rules.allow.filter((rule) => rule.specifier !== undefined) }
  return {
    mode: chosen ?? "workspace-write",
    ...(chosen === undefined ? { fallback: true } : {}),
    network: settings?.network === true,
    ...(settings?.writable !== undefined ? { writable: settings.writable } : {}),
    ...(settings?.hidden !== undefined ? { hidden: settings.hidden } : {}),
    batonHome: env.home,
    exposed: (file) =>
      naming !== undefined && classify({ name: "Read", arguments: JSON.stringify({ file_path: file }) }, naming, [], env.workspace).verdict === "allow"
  }
}

/** Chat's `ask` mode: commands that run inside the sandbox are allowed without a question. */
export const sandboxedRules = (rules: PermissionRules, status: SandboxStatus): PermissionRules =>
  !status.active || rules.allow.includes(SANDBOXED_RULE) ? rules : { ...rules, allow: [...rules.allow, SANDBOXED_RULE] }

export const SANDBOX_NOTE =
  `Bash commands that run inside the sandbox are allowed without asking (${SANDBOXED_RULE}); one that asks to run outside it is always asked.`
