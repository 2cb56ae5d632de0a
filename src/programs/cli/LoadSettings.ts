import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { ConfigError } from "../../domain/Errors.js"
import { McpFile, type McpServerEntry } from "../../domain/McpConfig.js"
import { sanitizeName, serverNameProblem } from "../../domain/McpNames.js"
import type { SourcedRules } from "../../domain/Permissions.js"
import { emptyRules, SettingsFile } from "../../domain/Settings.js"

/** One MCP server entry as configured, and the file it came from. */
export interface ConfiguredMcpServer {
  readonly key: string
  readonly entry: McpServerEntry
  readonly source: string
}

/**
 * The settings files in force, merged: `$BATON_HOME/settings.json`, then `<workspace>/.mcp.json`
 * (MCP servers only), then `<workspace>/.baton/settings.json`.
 */
export interface LoadedSettings {
  /** Scalars: the later file wins. Compaction: merged key by key. (MCP servers are in `mcpServers`.) */
  readonly file: Omit<SettingsFile, "mcpServers">
  /**
   * Rule lists are concatenated, not replaced: a workspace file can add rules but never drop a deny
   * rule of the user's own file. Each rule names the file it came from (the first that has it).
   */
  readonly rules: SourcedRules
  /** The files that exist and were read, in merge order. */
  readonly sources: ReadonlyArray<string>
  /** By name: a later file's entry replaces an earlier one's. */
  readonly mcpServers: ReadonlyArray<ConfiguredMcpServer>
}

export const settingsPaths = (home: string, workspace: string): ReadonlyArray<string> => [
  Path.join(home, "settings.json"),
  Path.join(workspace, ".mcp.json"),
  Path.join(workspace, ".baton", "settings.json")
]

const decodeSettings = Schema.decodeUnknownEither(SettingsFile, { errors: "all" })
const decodeMcp = Schema.decodeUnknownEither(McpFile, { errors: "all" })

const pathText = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc === "" ? String(key) : `${acc}.${String(key)}`), "")

const PLURAL: Record<string, string> = { "a string": "strings", "a number": "numbers", "a whole number": "whole numbers", "an object": "objects" }

/** A schema's type as a person writing JSON reads it: `ReadonlyArray<string>` is "a list of strings". */
export const readableType = (type: string): string => {
  const list = /^(?:ReadonlyArray|Array)<(.*)>$/s.exec(type) ?? /^readonly (.*)\[\]$/s.exec(type)
  if (list !== null) {
    const item = readableType(list[1]!)
    return `a list of ${PLURAL[item] ?? item}`
  }
  if (/^(?:Record<|\{)/.test(type)) return "an object"
  switch (type) {
    case "string":
    case "NonEmptyString":
    case "Trimmed":
      return "a string"
    case "number":
    case "Finite":
      return "a number"
    case "Int":
    case "NonNegativeInt":
    case "PositiveInt":
      return "a whole number"
    case "boolean":
      return "true or false"
    default:
      return type
  }
}

/**
 * One readable line per field: the issues of a literal union ("Expected "a", actual "x"" four times)
 * become one "expected "a" | "b", got "x"".
 */
export const describeIssues = (issues: ReadonlyArray<ParseResult.ArrayFormatterIssue>): ReadonlyArray<{ readonly field: string; readonly message: string }> => {
  const byField = new Map<string, Array<ParseResult.ArrayFormatterIssue>>()
  for (const issue of issues) {
    const field = pathText(issue.path)
    byField.set(field, [...(byField.get(field) ?? []), issue])
  }
  return [...byField.entries()].map(([field, list]) => {
    if (list.some((i) => i._tag === "Unexpected")) {
      const expected = /expected: (.*)$/.exec(list.find((i) => i._tag === "Unexpected")!.message)?.[1]
      return { field, message: `unknown key${expected !== undefined ? `; expected one of ${expected}` : ""}` }
    }
    const parsed = list.map((i) => /^Expected (.*), actual (.*)$/s.exec(i.message))
    if (parsed.every((m) => m !== null)) {
      const expected = [...new Set(parsed.map((m) => m![1]!))]
      const got = parsed[0]![2]!
      const shown = field === "" ? "a JSON object" : expected.map(readableType).join(" | ")
      return { field, message: `expected ${shown}, got ${got.length > 60 ? `${got.slice(0, 60)}…` : got}` }
    }
    return { field, message: list.map((i) => i.message).join("; ") }
  })
}

const readFile = (file: string): Effect.Effect<SettingsFile | undefined, ConfigError> =>
  Effect.gen(function*() {
    const text = yield* Effect.try({
      try: () => (Fs.existsSync(file) ? Fs.readFileSync(file, "utf8") : undefined),
      catch: (cause) => new ConfigError({ source: file, message: `cannot read ${file}: ${cause instanceof Error ? cause.message : String(cause)}` })
    })
    if (text === undefined) return undefined
    const json = yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: (cause) => new ConfigError({ source: file, message: `${file} is not valid JSON: ${cause instanceof Error ? cause.message : String(cause)}` })
    })
    const decoded = Path.basename(file) === ".mcp.json" ? decodeMcp(json) : decodeSettings(json)
    return yield* Either.match(decoded, {
      onRight: Effect.succeed,
      onLeft: (error) => {
        const issues = describeIssues(ParseResult.ArrayFormatter.formatErrorSync(error))
        const first = issues[0]!
        return Effect.fail(
          new ConfigError({
            source: file,
            field: first.field === "" ? "(root)" : first.field,
            message: `invalid settings in ${file}:\n${issues.map((i) => `  ${i.field === "" ? "(root)" : i.field}: ${i.message}`).join("\n")}`
          })
        )
      }
    })
  })

const unique = (...lists: ReadonlyArray<ReadonlyArray<string> | undefined>): ReadonlyArray<string> => [...new Set(lists.flatMap((l) => l ?? []))]

/** A later file's mode and network win; the writable and hidden lists add up. */
const mergeSandbox = (a: SettingsFile["sandbox"], b: SettingsFile["sandbox"]): NonNullable<SettingsFile["sandbox"]> => {
  const writable = unique(a?.writable, b?.writable)
  const hidden = unique(a?.hidden, b?.hidden)
  return {
    ...a,
    ...b,
    ...(writable.length > 0 ? { writable } : {}),
    ...(hidden.length > 0 ? { hidden } : {})
  }
}

export const mergeSettings = (files: ReadonlyArray<SettingsFile>): Omit<LoadedSettings, "sources" | "mcpServers"> => {
  const file = files.reduce<SettingsFile>((acc, next) => ({
    ...acc,
    ...next,
    ...(acc.compaction !== undefined || next.compaction !== undefined ? { compaction: { ...acc.compaction, ...next.compaction } } : {}),
    ...(acc.agents !== undefined || next.agents !== undefined ? { agents: { ...acc.agents, ...next.agents } } : {}),
    ...(acc.pricing !== undefined || next.pricing !== undefined ? { pricing: { ...acc.pricing, ...next.pricing } } : {}),
    ...(acc.sandbox !== undefined || next.sandbox !== undefined ? { sandbox: mergeSandbox(acc.sandbox, next.sandbox) } : {})
  }), {})
  const { mcpServers: _servers, permissions: _ignored, ...rest } = file
  const perms = files.map((f) => f.permissions)
  return {
    file: rest,
    rules: {
      allow: unique(...perms.map((p) => p?.allow)),
      ask: unique(...perms.map((p) => p?.ask)),
      deny: unique(...perms.map((p) => p?.deny)),
      additionalDirectories: unique(...perms.map((p) => p?.additionalDirectories))
    }
  }
}

/**
 * The MCP servers of every file, by name (later wins). Two names that become one once sanitised
 * (`my.server`, `my_server`) would offer their tools under the same `mcp__<name>__` prefix: refused.
 */
const mergeServers = (found: ReadonlyArray<{ readonly path: string; readonly file: SettingsFile }>): Effect.Effect<ReadonlyArray<ConfiguredMcpServer>, ConfigError> => {
  const byKey = new Map<string, ConfiguredMcpServer>()
  for (const { file, path } of found) {
    for (const [key, entry] of Object.entries(file.mcpServers ?? {})) {
      const problem = serverNameProblem(sanitizeName(key))
      if (problem !== undefined) {
        return Effect.fail(new ConfigError({ source: path, field: `mcpServers.${key}`, message: `invalid settings in ${path}:\n  mcpServers.${key}: ${problem}` }))
      }
      byKey.set(key, { key, entry, source: path })
    }
  }
  const servers = [...byKey.values()]
  const clash = servers.find((a, i) => servers.some((b, j) => j < i && sanitizeName(b.key) === sanitizeName(a.key)))
  if (clash === undefined) return Effect.succeed(servers)
  const other = servers.find((b) => b !== clash && sanitizeName(b.key) === sanitizeName(clash.key))!
  return Effect.fail(new ConfigError({
    source: clash.source,
    field: `mcpServers.${clash.key}`,
    message: `MCP servers ${JSON.stringify(other.key)} (${other.source}) and ${JSON.stringify(clash.key)} (${clash.source}) would both offer their tools as mcp__${sanitizeName(clash.key)}__…; rename one of them`
  }))
}

/** Where each rule is written: a workspace file relative to the workspace, any other by its full path. */
const ruleSources = (found: ReadonlyArray<{ readonly path: string; readonly file: SettingsFile }>, workspace: string): Record<string, string> => {
  const sources: Record<string, string> = {}
  for (const { file, path } of found) {
    const relative = Path.relative(workspace, path)
    const shown = relative.startsWith("..") || Path.isAbsolute(relative) ? path : relative
    const p = file.permissions
    for (const text of [...(p?.allow ?? []), ...(p?.ask ?? []), ...(p?.deny ?? [])]) sources[text.trim()] ??= shown
  }
  return sources
}

/** Reads and merges the settings files; an invalid one is a ConfigError naming the file and the field. */
export const loadSettings = (home: string, workspace: string): Effect.Effect<LoadedSettings, ConfigError> =>
  Effect.gen(function*() {
    const found: Array<{ readonly path: string; readonly file: SettingsFile }> = []
    for (const path of settingsPaths(home, workspace)) {
      const file = yield* readFile(path)
      if (file !== undefined) found.push({ path, file })
    }
    if (found.length === 0) return { file: {}, rules: emptyRules, sources: [], mcpServers: [] }
    const merged = mergeSettings(found.map((f) => f.file))
    return {
      ...merged,
      rules: { ...merged.rules, sources: ruleSources(found, workspace) },
      sources: found.map((f) => f.path),
      mcpServers: yield* mergeServers(found)
    }
  })
