import { Duration, Effect, Either } from "effect"
import type { ToolDefinition } from "../../domain/Conversation.js"
import { ToolError } from "../../domain/Errors.js"
import { nameTools, serverOfToolName } from "../../domain/McpNames.js"
import type { ImagePart } from "../../domain/Messages.js"
import type { McpCallResult, McpClients, McpContent, McpServerState, McpTool } from "../McpClients.js"
import { MAX_IMAGE_BYTES } from "./Read.js"
import { type Tool, toDefinition, type ToolOutput } from "./Tool.js"

/**
 * The tools an executor offers at this moment: its built-ins, then the tools of every MCP server
 * that is ready, as `mcp__<server>__<tool>`. An MCP tool is a Tool like any other (same locks,
 * output limit and interrupts); its call goes to the McpClients port, bounded by the per-call timeout.
 */
export interface Catalog {
  readonly byName: ReadonlyMap<string, Tool>
  readonly definitions: ReadonlyArray<ToolDefinition>
  /** What the model hears when it calls a tool that is not offered. */
  readonly unknown: (name: string) => string
}

const unknownTool = (byName: ReadonlyMap<string, Tool>) => (name: string) =>
  `Unknown tool "${name}". Available tools: ${[...byName.keys()].join(", ")}`

export const staticCatalog = (tools: ReadonlyArray<Tool>): Catalog => {
  const byName = new Map(tools.map((tool) => [tool.name, tool]))
  return { byName, definitions: tools.map(toDefinition), unknown: unknownTool(byName) }
}

const IMAGE_TYPES: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"])

/** An MCP image the wire formats can carry (the Read tool's own limits), else undefined. */
const imagePart = (content: { readonly mimeType: string; readonly data: string }): ImagePart | undefined =>
  IMAGE_TYPES.has(content.mimeType) && (content.data.length * 3) / 4 <= MAX_IMAGE_BYTES
    ? { media_type: content.mimeType as ImagePart["media_type"], data: content.data }
    : undefined

const kb = (base64: string) => `${(Math.ceil((base64.length * 3) / 4) / 1024).toFixed(1)} KB`

const contentText = (content: McpContent): string => {
  switch (content.type) {
    case "text":
      return content.text
    case "image":
      return imagePart(content) !== undefined
        ? `[image: ${content.mimeType}, ${kb(content.data)}]`
        : `[image: ${content.mimeType}, ${kb(content.data)}; a type or size the model cannot be shown]`
    case "audio":
      // The model learns what came and how big it was.
      return `[${content.type}: ${content.mimeType}, ${kb(content.data)}; not shown to the model]`
    case "resource":
      return content.text !== undefined
        ? `[resource ${content.uri}]\n${content.text}`
        : `[resource ${content.uri}: ${content.mimeType ?? "binary"}, ${kb(content.blob ?? "")}]`
    case "resource_link":
      return `[resource link: ${content.name} ${content.uri}${content.description !== undefined ? ` (${content.description})` : ""}]`
  }
}

const sameJson = (text: string, value: unknown): boolean => {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(value)
  } catch {
    return false
  }
}

/** What the model sees of a result: its content as text, and structured content as JSON unless a text part already is it. */
export const resultOutput = (result: McpCallResult): ToolOutput => {
  const parts = result.content.map(contentText)
  const structured = result.structuredContent
  if (structured !== undefined && !result.content.some((c) => c.type === "text" && sameJson(c.text, structured))) {
    parts.push(JSON.stringify(structured))
  }
  const images = result.content.flatMap((c) => (c.type === "image" ? [imagePart(c)].filter((i) => i !== undefined) : []))
  return { output: parts.length === 0 ? "(no output)" : parts.join("\n"), isError: result.isError, ...(images.length > 0 ? { images } : {}) }
}

const isRecord = (input: unknown): input is Readonly<Record<string, unknown>> =>
  typeof input === "object" && input !== null && !Array.isArray(input)

const toTool = (mcp: McpClients["Type"], server: McpServerState, name: string, tool: McpTool, timeout: Duration.Duration): Tool => ({
  name,
  description: tool.description !== "" ? tool.description : `The ${tool.name} tool of the MCP server ${server.name}`,
  parameters: tool.inputSchema,
  truncationHint: "call the tool with narrower arguments to see the rest",
  readOnly: server.readOnly,
  prepare: (input) =>
    isRecord(input)
      ? Either.right({
        args: input,
        run: () =>
          mcp.call(server.name, tool.name, input).pipe(
            Effect.timeoutFail({
              duration: timeout,
              onTimeout: () =>
                new ToolError({ tool: name, message: `${name} timed out after ${Duration.toMillis(timeout)} ms (mcpToolTimeoutMs); the call was cancelled` })
            }),
            Effect.mapError((e) => (e._tag === "ToolError" ? e : new ToolError({ tool: name, message: e.message }))),
            Effect.map(resultOutput)
          )
      })
      : Either.left(`Invalid arguments for ${name}: expected a JSON object`)
})

const build = (mcp: McpClients["Type"], builtins: ReadonlyArray<Tool>, servers: ReadonlyArray<McpServerState>, timeout: Duration.Duration): Catalog => {
  const tools = [
    ...builtins,
    ...servers.flatMap((server) =>
      server.status === "ready" ? nameTools(server.name, server.tools).offered.map((t) => toTool(mcp, server, t.name, t.tool, timeout)) : []
    )
  ]
  const { byName, definitions } = staticCatalog(tools)
  const unknown = (name: string) => {
    const server = servers.find((s) => s.name === serverOfToolName(name))
    if (server === undefined) return unknownTool(byName)(name)
    if (server.status !== "ready") return `MCP server "${server.name}" is not running (it ${server.error ?? "stopped"}); its tools are unavailable`
    const offered = [...byName.keys()].filter((n) => serverOfToolName(n) === server.name)
    return `MCP server "${server.name}" offers no tool ${name}. Its tools: ${offered.join(", ") || "(none)"}`
  }
  return { byName, definitions, unknown }
}

/** The catalog as the servers stand now; rebuilt only when their states change (same array otherwise). */
export const mcpCatalog = (mcp: McpClients["Type"], builtins: ReadonlyArray<Tool>, timeoutMs: number): Effect.Effect<Catalog> => {
  const timeout = Duration.millis(timeoutMs)
  let memo: { readonly servers: ReadonlyArray<McpServerState>; readonly catalog: Catalog } | undefined
  return Effect.map(mcp.servers, (servers) => {
    if (memo?.servers !== servers) memo = { servers, catalog: build(mcp, builtins, servers, timeout) }
    return memo.catalog
  })
}
