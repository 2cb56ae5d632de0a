import * as Effect from "effect/Effect"
import { McpClients } from "../../services/McpClients.js"
import type { Io } from "./Io.js"
import { serverJson, serverLines } from "./McpReport.js"
import { colorFor, makeStyle } from "./view/Style.js"

/**
 * `baton mcp list [--json]`: starts the workspace's MCP servers as a session would, says what became
 * of each (its transport, whether it started and why not, its tools under the names the model sees),
 * and stops them again.
 */
export const listMcpServers = Effect.fn("Cli.mcpList")(function*(io: Io, options: { readonly json: boolean }) {
  const mcp = yield* McpClients
  const servers = yield* mcp.servers
  if (options.json) {
    for (const s of servers) io.out(`${JSON.stringify(serverJson(s))}\n`)
    return
  }
  const style = makeStyle(colorFor({ isTTY: io.stdoutTTY }, io.env))
  if (servers.length === 0) {
    io.out(`no MCP servers configured ${style.dim("(settings mcpServers, or <workspace>/.mcp.json)")}\n`)
    return
  }
  io.out(`${servers.flatMap((s) => serverLines(s, style)).join("\n")}\n`)
})
