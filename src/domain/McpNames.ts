/**
 * How MCP tools are named for the model and for permission rules: `mcp__<server>__<tool>`, in the
 * characters every provider accepts (`[A-Za-z0-9_-]`, at most 64). A server name never contains
 * `__` nor ends in `_` (the settings refuse it), so the server of a tool name is always the part
 * before the first `__` after the prefix, and the rule `mcp__<server>` names exactly that server's tools.
 */

export const MCP_PREFIX = "mcp__"
export const MAX_TOOL_NAME = 64
/** Long enough for a readable name, short enough to leave room for the tool's. */
export const MAX_SERVER_NAME = 40

const SERVER_NAME = /^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$/

/** Every character a provider would refuse becomes `_`. */
export const sanitizeName = (raw: string): string => raw.replace(/[^A-Za-z0-9_-]/g, "_")

/** Why a (sanitised) server name cannot be used, or undefined when it can. */
export const serverNameProblem = (name: string): string | undefined =>
  name.length === 0
    ? "a server name cannot be empty"
    : name.length > MAX_SERVER_NAME
    ? `a server name has at most ${MAX_SERVER_NAME} characters`
    : !SERVER_NAME.test(name)
    ? "a server name may not start or end with \"_\" nor contain \"__\" (it separates the server from the tool in mcp__<server>__<tool>)"
    : undefined

/** FNV-1a, 32 bits: a stable suffix that keeps two shortened names apart. */
const hash = (text: string): string => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h.toString(16).padStart(8, "0")
}

/** The name the model sees; past 64 characters the tail becomes a hash of the whole name. */
export const mcpToolName = (server: string, tool: string): string => {
  const full = `${MCP_PREFIX}${server}__${sanitizeName(tool)}`
  if (full.length <= MAX_TOOL_NAME) return full
  return `${full.slice(0, MAX_TOOL_NAME - 9)}_${hash(full)}`
}

/** The server part of an MCP tool name, or undefined for any other name. */
export const serverOfToolName = (name: string): string | undefined => {
  if (!name.startsWith(MCP_PREFIX)) return undefined
  const rest = name.slice(MCP_PREFIX.length)
  const end = rest.indexOf("__")
  return end > 0 ? rest.slice(0, end) : undefined
}

/** A rule's tool part names this call's tool: exactly, or as `mcp__<server>` for every tool of that server. */
export const ruleNamesTool = (ruleTool: string, toolName: string): boolean =>
  ruleTool === toolName ||
  (ruleTool.startsWith(MCP_PREFIX) && SERVER_NAME.test(ruleTool.slice(MCP_PREFIX.length)) &&
    toolName.startsWith(`${ruleTool}__`))

export interface NamedTool<T> {
  /** `mcp__<server>__<tool>` */
  readonly name: string
  readonly server: string
  readonly tool: T
}

export interface RefusedTools {
  readonly server: string
  readonly name: string
  readonly tools: ReadonlyArray<string>
  readonly message: string
}

/**
 * The names one server's tools are offered under. Tools whose names collide once sanitised (`a.b`
 * and `a_b`, or a name listed twice) are all refused: which one the model would get would depend on
 * the server's order, and a rule written for one must never reach the other.
 */
export const nameTools = <T extends { readonly name: string }>(
  server: string,
  tools: ReadonlyArray<T>
): { readonly offered: ReadonlyArray<NamedTool<T>>; readonly refused: ReadonlyArray<RefusedTools> } => {
  const byName = new Map<string, Array<T>>()
  for (const tool of tools) {
    const name = mcpToolName(server, tool.name)
    byName.set(name, [...(byName.get(name) ?? []), tool])
  }
  const offered: Array<NamedTool<T>> = []
  const refused: Array<RefusedTools> = []
  for (const [name, group] of byName) {
    if (group.length === 1) {
      offered.push({ name, server, tool: group[0]! })
      continue
    }
    const names = group.map((t) => t.name)
    refused.push({
      server,
      name,
      tools: names,
      message: `MCP server "${server}": tools ${names.map((n) => JSON.stringify(n)).join(" and ")} would all be offered as ${name}; none of them is offered`
    })
  }
  return { offered, refused }
}
