import { Either, ParseResult, Schema } from "effect"
import { sanitizeName } from "./McpNames.js"
import * as Path from "./PosixPath.js"

/**
 * MCP servers as users configure them, in Claude Code's shape (settings `mcpServers`, a workspace's
 * `.mcp.json`): a stdio command, or a remote server over streamable HTTP (`"type": "http"`) or the
 * older HTTP+SSE transport (`"type": "sse"`). `${VAR}` and `${VAR:-default}` in the command, args,
 * env, cwd, url and headers expand from the environment when a session starts, so secrets stay out
 * of the files and never reach a conversation.
 */

const strict = { parseOptions: { onExcessProperty: "error" } } as const
const StringMap = Schema.Record({ key: Schema.String, value: Schema.String })

export const McpStdioEntry = Schema.Struct({
  type: Schema.optionalWith(Schema.Literal("stdio"), { exact: true }),
  command: Schema.NonEmptyString,
  args: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  env: Schema.optionalWith(StringMap, { exact: true }),
  cwd: Schema.optionalWith(Schema.String, { exact: true }),
  /** The user's word that this server only reads: its calls take the shared lock, not the global one. */
  readOnly: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /** Run the server inside the same OS sandbox as Bash (settings `sandbox`): its working directory writable, secrets hidden. */
  sandbox: Schema.optionalWith(Schema.Boolean, { exact: true })
}).annotations(strict)

export const McpRemoteEntry = Schema.Struct({
  type: Schema.Literal("http", "sse"),
  url: Schema.NonEmptyString,
  headers: Schema.optionalWith(StringMap, { exact: true }),
  readOnly: Schema.optionalWith(Schema.Boolean, { exact: true })
}).annotations(strict)

const remoteType = (u: unknown): boolean =>
  typeof u === "object" && u !== null && "type" in u && (u.type === "http" || u.type === "sse")

/**
 * `type` picks the shape before anything is checked, so a mistake is reported against the shape
 * the user meant (a stdio entry's own fields), not as the failures of both alternatives.
 */
export const McpServerEntry = Schema.transformOrFail(Schema.Unknown, Schema.typeSchema(Schema.Union(McpStdioEntry, McpRemoteEntry)), {
  strict: true,
  decode: (input, options) =>
    remoteType(input) ? ParseResult.decodeUnknown(McpRemoteEntry)(input, options) : ParseResult.decodeUnknown(McpStdioEntry)(input, options),
  encode: ParseResult.succeed
})
export type McpServerEntry = typeof McpServerEntry.Type

const isRemote = (entry: McpServerEntry): entry is typeof McpRemoteEntry.Type => remoteType(entry)

/** Names are checked where the files are merged (`serverNameProblem`), so the message can say what is wrong with one. */
export const McpServers = Schema.Record({ key: Schema.String, value: McpServerEntry })

/** `<workspace>/.mcp.json` */
export const McpFile = Schema.Struct({
  mcpServers: Schema.optionalWith(McpServers, { exact: true })
}).annotations(strict)
export type McpFile = typeof McpFile.Type

export type McpTransportKind = "stdio" | "http" | "sse"

/** How to reach a server, every `${VAR}` expanded. */
export type McpLaunch =
  | {
    readonly _tag: "Stdio"
    readonly command: string
    readonly args: ReadonlyArray<string>
    readonly env: Readonly<Record<string, string>>
    /** Absolute; the workspace unless the entry names another directory. */
    readonly cwd: string
    /** Inside the OS sandbox (`"sandbox": true` on the entry). */
    readonly sandbox?: boolean
  }
  | { readonly _tag: "Http" | "Sse"; readonly url: string; readonly headers: Readonly<Record<string, string>> }

/** One configured server, ready to start (or saying why it cannot). */
export interface McpServerConfig {
  /** As used in tool names and rules (`mcp__<name>__…`): the configured key, sanitised. */
  readonly name: string
  /** The key as written in the file. */
  readonly key: string
  /** The file that configured it (the last one, when several name it). */
  readonly source: string
  readonly transport: McpTransportKind
  readonly readOnly: boolean
  /** Left: why it cannot start (a variable that is not set), said of the server: "needs …". */
  readonly launch: Either.Either<McpLaunch, string>
  /** Values taken from the environment: no message about the server may show them. */
  readonly secrets: ReadonlyArray<string>
}

export type EnvLookup = (name: string) => string | undefined

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g

interface Expanded {
  readonly text: string
  readonly values: ReadonlyArray<string>
}

/** `${VAR}` and `${VAR:-default}`; Left names the first variable that is unset and has no default. */
export const expandVariables = (text: string, lookup: EnvLookup): Either.Either<Expanded, string> => {
  const values: Array<string> = []
  let missing: string | undefined
  const expanded = text.replace(VARIABLE, (_match, name: string, fallback: string | undefined) => {
    const value = lookup(name)
    if (value !== undefined && value !== "") {
      values.push(value)
      return value
    }
    if (fallback !== undefined) return fallback
    missing ??= name
    return ""
  })
  return missing === undefined ? Either.right({ text: expanded, values }) : Either.left(missing)
}

/** Every variable an entry names, so the caller reads exactly those from the environment. */
export const variablesIn = (entry: McpServerEntry): ReadonlyArray<string> => {
  const texts = isRemote(entry)
    ? [entry.url, ...Object.values(entry.headers ?? {})]
    : [entry.command, ...(entry.args ?? []), ...Object.values(entry.env ?? {}), entry.cwd ?? ""]
  return [...new Set(texts.flatMap((text) => [...text.matchAll(VARIABLE)].map((m) => m[1]!)))]
}

const resolveDir = (workspace: string, dir: string): string => (dir === "" ? workspace : Path.resolve(workspace, dir))

/** Every `${VAR}` of one entry expanded; a missing variable leaves the server unstartable, with the reason. */
export const resolveServer = (
  key: string,
  entry: McpServerEntry,
  source: string,
  workspace: string,
  lookup: EnvLookup
): McpServerConfig => {
  const secrets: Array<string> = []
  const one = (text: string) =>
    Either.map(expandVariables(text, lookup), (e) => {
      secrets.push(...e.values)
      return e.text
    })
  const all = (texts: ReadonlyArray<string>) => Either.all(texts.map(one))
  const record = (map: Readonly<Record<string, string>> | undefined) =>
    Either.map(all(Object.values(map ?? {})), (values) => Object.fromEntries(Object.keys(map ?? {}).map((k, i) => [k, values[i]!])))
  const launch: Either.Either<McpLaunch, string> = isRemote(entry)
    ? Either.all({ url: one(entry.url), headers: record(entry.headers) }).pipe(
      Either.map(({ headers, url }) => ({ _tag: entry.type === "http" ? "Http" as const : "Sse" as const, url, headers }))
    )
    : Either.all({ command: one(entry.command), args: all(entry.args ?? []), env: record(entry.env), cwd: one(entry.cwd ?? "") }).pipe(
      Either.map(({ args, command, cwd, env }) => ({
        _tag: "Stdio" as const,
        command,
        args,
        env,
        cwd: resolveDir(workspace, cwd),
        ...(entry.sandbox === true ? { sandbox: true } : {})
      }))
    )
  return {
    name: sanitizeName(key),
    key,
    source,
    transport: entry.type ?? "stdio",
    readOnly: entry.readOnly === true,
    launch: Either.mapLeft(launch, (name) => `needs the environment variable ${name}, which is not set (write \${${name}:-default} for a default)`),
    // Longest first, so a value that contains another is hidden whole.
    secrets: [...new Set(secrets.filter((s) => s.length >= 4))].sort((a, b) => b.length - a.length)
  }
}

/** Hides every secret of the server in a message about it. */
export const scrub = (text: string, secrets: ReadonlyArray<string>): string =>
  secrets.reduce((acc, secret) => acc.split(secret).join("***"), text)
