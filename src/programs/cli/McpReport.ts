import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { nameTools } from "../../domain/McpNames.js"
import type { McpClients, McpServerState, McpToolAnnotations } from "../../services/McpClients.js"
import type { Style } from "./view/Style.js"

/**
 * What a person hears about the workspace's MCP servers: each server that did not start or died,
 * once, with why (its tools are left out and the session goes on), and tools refused for a name
 * collision; and how `baton mcp list` shows them.
 */

interface Problem {
  readonly key: string
  readonly text: string
}

export const mcpProblems = (servers: ReadonlyArray<McpServerState>): ReadonlyArray<Problem> =>
  servers.flatMap((s): ReadonlyArray<Problem> => {
    if (s.status === "failed") return [{ key: `${s.name}:failed`, text: `MCP server "${s.name}" ${s.error ?? "did not start"}; its tools are left out` }]
    if (s.status === "exited") return [{ key: `${s.name}:exited`, text: `MCP server "${s.name}" ${s.error ?? "stopped"}; its tools are gone for the rest of this session` }]
    return nameTools(s.name, s.tools).refused.map((r) => ({ key: `${s.name}:refused:${r.name}`, text: r.message }))
  })

/** Says every problem once: those at start-up now, later ones (a server that dies) as they happen. */
export const reportMcp = (mcp: McpClients["Type"], say: (text: string) => Effect.Effect<void>): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const said = new Set<string>()
    const tell = (servers: ReadonlyArray<McpServerState>) =>
      Effect.forEach(mcpProblems(servers).filter((p) => !said.has(p.key)), (p) => Effect.zipRight(Effect.sync(() => said.add(p.key)), say(p.text)), {
        discard: true
      })
    yield* tell(yield* mcp.servers)
    yield* Effect.forkScoped(Stream.runForEach(mcp.changes, tell))
  })

/** How many MCP tools the model is offered now. */
export const offeredCount = (servers: ReadonlyArray<McpServerState>): number =>
  servers.reduce((n, s) => n + (s.status === "ready" ? nameTools(s.name, s.tools).offered.length : 0), 0)

const hintWords = (a: McpToolAnnotations): ReadonlyArray<string> => [
  ...(a.readOnlyHint === true ? ["read-only"] : []),
  ...(a.destructiveHint === true ? ["destructive"] : []),
  ...(a.idempotentHint === true ? ["idempotent"] : []),
  ...(a.openWorldHint === true ? ["open-world"] : [])
]

/** What an approval question adds for an MCP tool whose server gave hints: shown, and said to be unchecked. */
export const toolNote = (servers: ReadonlyArray<McpServerState>, name: string): string | undefined => {
  for (const s of servers) {
    const found = s.status === "ready" ? nameTools(s.name, s.tools).offered.find((t) => t.name === name) : undefined
    if (found === undefined) continue
    const hints = hintWords(found.tool.annotations)
    return hints.length > 0 ? `MCP server "${s.name}" says this tool is ${hints.join(", ")} (its hint, not checked by Baton)` : undefined
  }
  return undefined
}

/** One JSON object per server, as `baton mcp list --json` prints them. */
export const serverJson = (s: McpServerState) => {
  const named = nameTools(s.name, s.tools)
  return {
    name: s.name,
    transport: s.transport,
    source: s.source,
    read_only: s.readOnly,
    status: s.status,
    ...(s.error !== undefined ? { error: s.error } : {}),
    ...(s.serverInfo !== undefined ? { server_info: s.serverInfo } : {}),
    tools: named.offered.map((t) => ({
      name: t.name,
      tool: t.tool.name,
      description: t.tool.description,
      annotations: t.tool.annotations,
      input_schema: t.tool.inputSchema
    })),
    ...(named.refused.length > 0 ? { refused: named.refused.map((r) => ({ name: r.name, tools: r.tools, message: r.message })) } : {})
  }
}

const oneLine = (text: string, max: number) => {
  const line = text.replace(/\s+/g, " ").trim()
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

/** The lines `baton mcp list` prints for one server: its state, then each tool offered with the server's hints. */
export const serverLines = (s: McpServerState, style: Style): ReadonlyArray<string> => {
  const named = nameTools(s.name, s.tools)
  const status = s.status === "ready" ? style.green(`ready, ${named.offered.length} tool${named.offered.length === 1 ? "" : "s"}`) : style.red(`${s.status}: ${s.error ?? ""}`)
  const lock = s.readOnly ? " · readOnly (shared lock)" : ""
  const width = Math.max(0, ...named.offered.map((t) => t.name.length))
  return [
    `${style.bold(s.name)}  ${s.transport}${lock}  ${status}  ${style.dim(s.source)}`,
    ...named.offered.map((t) => {
      const hints = hintWords(t.tool.annotations)
      return `  ${t.name.padEnd(width)}  ${oneLine(t.tool.description, 80)}${hints.length > 0 ? style.dim(`  (server says: ${hints.join(", ")}; not trusted)`) : ""}`
    }),
    ...named.refused.map((r) => `  ${style.red(r.message)}`)
  ]
}
