import { Effect, Either, JSONSchema, ParseResult, Schema } from "effect"
import type { ToolDefinition } from "../../domain/Conversation.js"
import type { ImagePart } from "../../domain/Messages.js"
import type { ToolError } from "../../domain/Errors.js"
import { DEFAULT_MCP_TOOL_TIMEOUT_MS } from "../../domain/Settings.js"
import type { ToolCallId } from "../../domain/Ids.js"
import type { ProcessTracker } from "../ProcessRegistry.js"
import type { FileState } from "./FileState.js"
import type { Sandbox } from "../Sandbox.js"

export interface ToolLimits {
  /** What the model sees of one result, in characters. */
  readonly outputChars: number
  readonly bashDefaultTimeoutMs: number
  readonly bashMaxTimeoutMs: number
  /** How long a process group gets between SIGTERM and SIGKILL. */
  readonly killGraceMs: number
  /** Lines Read returns when the call gives no `limit`. */
  readonly readDefaultLines: number
  /** How long one MCP tool call may take before it is cancelled. */
  readonly mcpTimeoutMs: number
}

export const defaultToolLimits: ToolLimits = {
  outputChars: 30_000,
  bashDefaultTimeoutMs: 120_000,
  bashMaxTimeoutMs: 600_000,
  killGraceMs: 2_000,
  readDefaultLines: 2_000,
  mcpTimeoutMs: DEFAULT_MCP_TOOL_TIMEOUT_MS
}

/** What a running tool may use; paths always go through `resolvePath` (workspace confinement). */
export interface ToolContext {
  readonly callId: ToolCallId
  readonly workspace: string
  /** Resolves a tool path against the workspace through symlinks; refuses one that escapes. */
  readonly resolvePath: (raw: string) => Effect.Effect<string, ToolError>
  /** Whether an already resolved path lies in the workspace or a granted root. */
  readonly isAllowed: (real: string) => boolean
  /** How to show a path to the model: relative inside the workspace, absolute elsewhere. */
  readonly displayPath: (absolute: string) => string
  readonly files: FileState
  readonly processes: ProcessTracker
  readonly limits: ToolLimits
  /** The OS sandbox shell commands run in; absent when there is none (mode off). */
  readonly sandbox?: Sandbox
  /** The call's writable directories beside the workspace (granted roots), for the sandbox. */
  readonly roots: ReadonlyArray<string>
}

export interface ToolOutput {
  readonly output: string
  /** A result the model should see as failed (a shell's non-zero exit). */
  readonly isError?: boolean
  readonly exit_code?: number
  readonly stdout?: string
  readonly stderr?: string
  /** Images for the model (Read of a PNG, an MCP tool's image content), beside the text. */
  readonly images?: ReadonlyArray<ImagePart>
}

/** A call whose arguments decoded: `args` feeds the resource key, `run` does the work. */
export interface PreparedCall {
  readonly args: unknown
  readonly run: (context: ToolContext) => Effect.Effect<ToolOutput, ToolError>
}

/** A tool as the executor sees it: arguments are checked before anything runs. */
export interface Tool {
  readonly name: string
  readonly description: string
  /** JSON Schema of the arguments (made from the effect Schema; an MCP server's own). */
  readonly parameters: Readonly<Record<string, unknown>>
  /** How to read what truncation cut, told to the model after the cut. */
  readonly truncationHint: string
  /** Takes the shared lock whatever its name: an MCP server the user's settings mark read-only. */
  readonly readOnly?: boolean
  /** Decodes the decoded-JSON arguments; `Left` is a message for the model. */
  readonly prepare: (input: unknown) => Either.Either<PreparedCall, string>
}

export interface ToolSpec<A, I> {
  readonly name: string
  readonly description: string
  readonly parameters: Schema.Schema<A, I>
  readonly truncationHint?: string
  readonly run: (args: A, context: ToolContext) => Effect.Effect<ToolOutput | string, ToolError>
}

const describeIssues = (error: ParseResult.ParseError): string => {
  const byPath = new Map<string, Array<string>>()
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const key = issue.path.length === 0 ? "arguments" : issue.path.map(String).join(".")
    const messages = byPath.get(key) ?? []
    if (!messages.includes(issue.message)) messages.push(issue.message)
    byPath.set(key, messages)
  }
  return [...byPath].map(([path, messages]) => `${path}: ${messages.join(" or ")}`).join("; ")
}

const jsonSchemaOf = (schema: Schema.Schema.Any): Readonly<Record<string, unknown>> => {
  const { $schema: _ignored, ...rest } = JSONSchema.make(schema)
  return rest
}

export const makeTool = <A, I>(spec: ToolSpec<A, I>): Tool => {
  const decode = Schema.decodeUnknownEither(spec.parameters, { errors: "all", onExcessProperty: "error" })
  return {
    name: spec.name,
    description: spec.description,
    parameters: jsonSchemaOf(spec.parameters),
    truncationHint: spec.truncationHint ?? "narrow the request to see the rest",
    prepare: (input) =>
      Either.match(decode(input), {
        onLeft: (error) => Either.left(`Invalid arguments for ${spec.name}: ${describeIssues(error)}`),
        onRight: (args) =>
          Either.right({
            args,
            run: (context) =>
              Effect.map(spec.run(args, context), (out) => (typeof out === "string" ? { output: out } : out))
          })
      })
  }
}

export const toDefinition = (tool: Tool): ToolDefinition => ({
  name: tool.name,
  description: tool.description,
  parameters: tool.parameters
})

/** Cuts text to `limit` characters, keeping the head, and says what was cut and how to get it. */
export const truncateHead = (text: string, limit: number, hint: string): string => {
  if (text.length <= limit) return text
  const cut = text.length - limit
  return `${text.slice(0, limit)}\n[output truncated: ${cut} of ${text.length} characters omitted; ${hint}]`
}
