import { Either } from "effect"
import * as Path from "./PosixPath.js"
import { ConfigError } from "./Errors.js"
import { matchesGlob } from "./Glob.js"
import { ruleNamesTool } from "./McpNames.js"
import type { PermissionRules } from "./Settings.js"
import { splitCommand, stripEnvAssignments } from "./ShellCommand.js"

/** `Bash(sandboxed)`: every command that runs inside the sandbox (the word Sandbox.ts uses too). */
const SANDBOXED_SPECIFIER = "sandboxed"

/**
 * Permission rules, pure. A rule is `Tool` (every call of that tool) or `Tool(specifier)`:
 * for Bash the specifier is a command (`git status`) or a word-prefix (`git status:*`);
 * for file tools it is a glob over the path, relative to the workspace unless absolute. An MCP
 * tool is `mcp__<server>__<tool>`, and `mcp__<server>` stands for every tool of that server.
 */
export interface Rule {
  readonly text: string
  readonly tool: string
  readonly specifier: string | undefined
}

export type Verdict = "allow" | "deny" | "ask"

export interface Classification {
  readonly verdict: Verdict
  /** `rule` for settings rules, `session` for an "allow always" grant, `default` when nothing matched. */
  readonly source: "rule" | "session" | "default"
  readonly rule?: string
  /** Why the call is asked although the rules would not ask (the sandbox's word, see Sandbox.ts). */
  readonly reason?: string
}

export interface CallToClassify {
  readonly name: string
  /** The raw JSON argument string. */
  readonly arguments: string
  /** A Bash call that will run inside the sandbox: what `Bash(sandboxed)` matches. */
  readonly sandboxed?: boolean
}

const SHELL_TOOLS: ReadonlySet<string> = new Set(["Bash"])
const PATH_ARG: Readonly<Record<string, string>> = {
  Read: "file_path",
  Write: "file_path",
  Edit: "file_path",
  Glob: "path",
  Grep: "path",
  LS: "path"
}

export const parseRule = (text: string): Either.Either<Rule, ConfigError> => {
  const m = /^([A-Za-z_][\w.-]*)(?:\((.*)\))?$/s.exec(text.trim())
  if (m === null || (m[2] !== undefined && m[2].trim().length === 0)) {
    return Either.left(
      new ConfigError({
        source: "permissions",
        message: `invalid rule ${JSON.stringify(text)}: expected Tool or Tool(specifier), e.g. Bash(git status:*) or Edit(src/**)`
      })
    )
  }
  return Either.right({ text: text.trim(), tool: m[1]!, specifier: m[2]?.trim() })
}

/** Parses every rule list; the first bad rule is the error, so a typo cannot silently drop a deny rule. */
export const parseRules = (rules: SourcedRules): Either.Either<CompiledRules, ConfigError> =>
  Either.all({
    allow: Either.all(rules.allow.map(parseRule)),
    ask: Either.all(rules.ask.map(parseRule)),
    deny: Either.all(rules.deny.map(parseRule))
  }).pipe(Either.map((lists) => ({
    ...lists,
    additionalDirectories: rules.additionalDirectories,
    ...(rules.sources !== undefined ? { sources: rules.sources } : {})
  })))

/** Rules as loaded, with the settings file each one came from (a denial names it). */
export interface SourcedRules extends PermissionRules {
  /** The rule's text (trimmed) → the file it is written in, as shown to the user. */
  readonly sources?: Readonly<Record<string, string>>
}

export interface CompiledRules {
  readonly allow: ReadonlyArray<Rule>
  readonly ask: ReadonlyArray<Rule>
  readonly deny: ReadonlyArray<Rule>
  readonly additionalDirectories: ReadonlyArray<string>
  readonly sources?: Readonly<Record<string, string>>
}

const parseArgs = (raw: string): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(raw)
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined
  } catch {
    return undefined
  }
}

const commandMatches = (specifier: string, part: string): boolean => {
  const spec = specifier.replace(/\s+/g, " ")
  if (spec.endsWith(":*")) {
    const prefix = spec.slice(0, -2).trimEnd()
    return part === prefix || part.startsWith(prefix + " ")
  }
  return part === spec
}

const pathMatches = (specifier: string, filePath: string, workspace: string): boolean => {
  const absolute = Path.resolve(workspace, filePath)
  if (Path.isAbsolute(specifier)) return matchesGlob(specifier, absolute)
  const relative = Path.relative(workspace, absolute)
  if (relative.startsWith("..") || Path.isAbsolute(relative)) return false
  return matchesGlob(specifier, relative === "" ? "." : relative)
}

/** Does `rule` cover one simple command or one path of this call? */
const ruleMatches = (rule: Rule, call: CallToClassify, subject: string | undefined, workspace: string): boolean => {
  if (rule.specifier === undefined) return ruleNamesTool(rule.tool, call.name)
  if (rule.tool !== call.name) return false
  if (SHELL_TOOLS.has(call.name) && rule.specifier === SANDBOXED_SPECIFIER) return call.sandboxed === true
  if (subject === undefined) return false
  if (SHELL_TOOLS.has(call.name)) return commandMatches(rule.specifier, subject)
  if (PATH_ARG[call.name] !== undefined) return pathMatches(rule.specifier, subject, workspace)
  return rule.specifier === subject
}

interface Subjects {
  /** Simple commands for Bash, the path for file tools, the raw arguments otherwise. */
  readonly subjects: ReadonlyArray<string | undefined>
  /** True when the parts cannot be trusted to describe everything the call does. */
  readonly opaque: boolean
  /** The whole normalized command line, for rules that name it verbatim. */
  readonly whole: string | undefined
}

const normalizeLine = (command: string): string => command.trim().replace(/\s+/g, " ")

const subjectsOf = (call: CallToClassify): Subjects => {
  const args = parseArgs(call.arguments)
  if (SHELL_TOOLS.has(call.name)) {
    const command = args?.["command"]
    if (typeof command !== "string") return { subjects: [undefined], opaque: true, whole: undefined }
    const split = splitCommand(command)
    return { subjects: split.parts.length > 0 ? split.parts : [""], opaque: split.opaque, whole: normalizeLine(command) }
  }
  const key = PATH_ARG[call.name]
  if (key !== undefined) {
    const value = args?.[key]
    if (value === undefined && key === "path") return { subjects: ["."], opaque: false, whole: undefined }
    return typeof value === "string"
      ? { subjects: [value], opaque: false, whole: undefined }
      : { subjects: [undefined], opaque: true, whole: undefined }
  }
  return { subjects: [call.arguments], opaque: false, whole: undefined }
}

/** A list covers a call when one rule names it whole, or every part is matched (and none is opaque). */
const coveringRule = (
  list: ReadonlyArray<Rule>,
  call: CallToClassify,
  { opaque, subjects, whole }: Subjects,
  workspace: string
): Rule | undefined => {
  const toolWide = list.find((rule) => rule.specifier === undefined && ruleNamesTool(rule.tool, call.name))
  if (toolWide !== undefined) return toolWide
  // The sandbox contains whatever the line does, so `Bash(sandboxed)` covers even an opaque one.
  const inside = list.find((rule) => rule.tool === call.name && rule.specifier === SANDBOXED_SPECIFIER && call.sandboxed === true)
  if (inside !== undefined) return inside
  if (whole !== undefined) {
    const verbatim = list.find((rule) => rule.tool === call.name && rule.specifier !== undefined && normalizeLine(rule.specifier) === whole)
    if (verbatim !== undefined) return verbatim
  }
  if (opaque) return undefined
  let last: Rule | undefined
  for (const subject of subjects) {
    last = list.find((rule) => ruleMatches(rule, call, subject, workspace))
    if (last === undefined) return undefined
  }
  return last
}

/**
 * deny (any part) > session grant > ask (any part) > allow (every part) > ask by default.
 * A grant outranks an ask rule because it is the user's own answer to that very question.
 */
export const classify = (
  call: CallToClassify,
  rules: CompiledRules,
  grants: ReadonlyArray<Rule>,
  workspace: string
): Classification => {
  const subjects = subjectsOf(call)
  const denySubjects = SHELL_TOOLS.has(call.name)
    ? subjects.subjects.flatMap((s) => (s === undefined ? [s] : [s, stripEnvAssignments(s)]))
    : subjects.subjects
  const denied = rules.deny.find((rule) => denySubjects.some((s) => ruleMatches(rule, call, s, workspace)))
  if (denied !== undefined) return { verdict: "deny", source: "rule", rule: denied.text }
  const granted = coveringRule(grants, call, subjects, workspace)
  if (granted !== undefined) return { verdict: "allow", source: "session", rule: granted.text }
  const asked = rules.ask.find((rule) => subjects.subjects.some((s) => ruleMatches(rule, call, s, workspace)))
  if (asked !== undefined) return { verdict: "ask", source: "rule", rule: asked.text }
  const allowed = coveringRule(rules.allow, call, subjects, workspace)
  if (allowed !== undefined) return { verdict: "allow", source: "rule", rule: allowed.text }
  return { verdict: "ask", source: "default" }
}

/**
 * The grant "allow always" adds for this session: as narrow as still useful. A shell command becomes a
 * prefix rule for exactly that command line (`npm test` → `Bash(npm test:*)`, never `Bash(npm:*)`);
 * a compound or opaque line is granted only verbatim; other tools are granted by name.
 */
export const grantFor = (call: CallToClassify): Rule => {
  if (SHELL_TOOLS.has(call.name)) {
    const command = parseArgs(call.arguments)?.["command"]
    if (typeof command === "string") {
      const split = splitCommand(command)
      const only = split.parts[0]
      const text = !split.opaque && split.parts.length === 1 && only !== undefined
        ? `${call.name}(${only}:*)`
        : `${call.name}(${normalizeLine(command)})`
      return { text, tool: call.name, specifier: text.slice(call.name.length + 1, -1) }
    }
  }
  return { text: call.name, tool: call.name, specifier: undefined }
}
