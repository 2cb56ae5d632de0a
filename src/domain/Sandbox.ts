import { Schema } from "effect"
import type { Classification } from "./Permissions.js"

/**
 * The shell's sandbox, pure: its settings, what the executor reports about it, how a call's
 * approval changes with it, and the note a command that failed inside it carries.
 *
 * `workspace-write`: the workspace, `additionalDirectories`, `writable` and a private /tmp are
 * writable, the rest of the file system read-only, secrets hidden, no network unless `network`.
 * `read-only`: nothing writable. `off`: the command runs with the user's full rights.
 */
export const SANDBOX_MODES = ["workspace-write", "read-only", "off"] as const
export const SandboxMode = Schema.Literal(...SANDBOX_MODES)
export type SandboxMode = typeof SandboxMode.Type

/** Settings `"sandbox"`; unknown keys are errors. */
export const SandboxSettings = Schema.Struct({
  mode: Schema.optionalWith(SandboxMode, { exact: true }),
  /** Let sandboxed commands reach the network (default false). */
  network: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /** More directories sandboxed commands may write (workspace-write only). */
  writable: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  /** More paths sandboxed commands must not see, beside the defaults. */
  hidden: Schema.optionalWith(Schema.Array(Schema.String), { exact: true })
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type SandboxSettings = typeof SandboxSettings.Type

/** The sandbox as the executor runs it: what was asked, and whether commands really run inside. */
export interface SandboxStatus {
  readonly mode: SandboxMode
  readonly network: boolean
  /** True when Bash commands run inside an OS sandbox (the mode is not off and one is available). */
  readonly active: boolean
  /** Why no sandbox runs although the mode asks for one: every Bash call is then asked. */
  readonly unavailable?: string
}

export const sandboxOff: SandboxStatus = { mode: "off", network: true, active: false }

/** One line for a header: the mode in force, or why it is not. */
export const describeSandbox = (status: SandboxStatus): string => {
  if (status.mode === "off") return status.unavailable === undefined ? "sandbox off" : `sandbox off (${status.unavailable})`
  if (!status.active) return `no sandbox (${status.unavailable ?? "unavailable"}): every Bash call is asked`
  return `sandbox ${status.mode}${status.network ? ", network on" : ", no network"}`
}

/** The data a host serves about it (the web page's header, `--json`). */
export const sandboxInfo = (status: SandboxStatus) => ({
  mode: status.mode,
  network: status.network,
  active: status.active,
  ...(status.unavailable !== undefined ? { unavailable: status.unavailable } : {})
})
export type SandboxInfo = ReturnType<typeof sandboxInfo>

/** The rule that allows any command running inside the sandbox. */
export const SANDBOXED_RULE = "Bash(sandboxed)"

const bashArgs = (call: { readonly name: string; readonly arguments: string }): Record<string, unknown> | undefined => {
  if (call.name !== "Bash") return undefined
  try {
    const value: unknown = JSON.parse(call.arguments)
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/** The model asked to run this Bash call outside the sandbox (`sandbox: false`). */
export const asksOutside = (call: { readonly name: string; readonly arguments: string }): boolean => bashArgs(call)?.["sandbox"] === false

/** Whether this call will run inside the sandbox (what `Bash(sandboxed)` matches). */
export const runsSandboxed = (call: { readonly name: string; readonly arguments: string }, status: SandboxStatus | undefined): boolean =>
  call.name === "Bash" && status?.active === true && !asksOutside(call)

export const OUTSIDE_REASON = "the model asks to run this command outside the sandbox (sandbox: false): always asked"

/**
 * The rules' verdict, then the sandbox's word on Bash: a call asking to run outside it is always
 * asked, and so is every call while the mode asks for a sandbox no one can provide. A deny stays a deny.
 */
export const withSandbox = (
  classification: Classification,
  call: { readonly name: string; readonly arguments: string },
  status: SandboxStatus | undefined
): Classification => {
  if (call.name !== "Bash" || status === undefined || status.mode === "off" || classification.verdict === "deny") return classification
  if (asksOutside(call)) return { verdict: "ask", source: "default", reason: OUTSIDE_REASON }
  if (!status.active) {
    return { verdict: "ask", source: "default", reason: `no sandbox for Bash (${status.unavailable ?? "unavailable"}): every command is asked` }
  }
  return classification
}

const FAILURES: ReadonlyArray<{ readonly pattern: RegExp; readonly what: string; readonly network: boolean }> = [
  { pattern: /read-only file system|EROFS/i, what: "read-only file system", network: false },
  {
    pattern:
      /network is unreachable|could not resolve host|temporary failure in name resolution|name or service not known|ENETUNREACH|EAI_AGAIN|getaddrinfo|connection refused|ECONNREFUSED|failed to connect/i,
    what: "no network",
    network: true
  },
  { pattern: /permission denied|operation not permitted|EACCES|EPERM/i, what: "permission denied", network: false }
]

/**
 * What a failed sandboxed command's result adds, so the model can ask for an unsandboxed run
 * instead of guessing: undefined when it succeeded or its output names none of the sandbox's refusals.
 */
export const sandboxFailureNote = (exitCode: number, output: string, status: SandboxStatus): string | undefined => {
  if (exitCode === 0 || !status.active) return undefined
  const found = FAILURES.filter((f) => f.pattern.test(output) && !(f.network && status.network)).map((f) => f.what)
  if (found.length === 0) return undefined
  return `[this command ran inside the sandbox (${describeSandbox(status)}) and failed with: ${found.join(", ")}; ` +
    "if the task needs it, ask to run it with sandbox: false]"
}
