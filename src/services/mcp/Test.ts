import { Effect, Layer, SubscriptionRef } from "effect"
import { McpCallError } from "../../domain/Errors.js"
import type { McpTransportKind } from "../../domain/McpConfig.js"
import { type McpCallResult, McpClients, type McpServerState, type McpServerStatus, type McpTool } from "../McpClients.js"

/** A tool whose calls run an Effect instead of reaching a server (tests drive it, e.g. with Deferreds). */
export interface ScriptedTool extends McpTool {
  readonly run: (args: Readonly<Record<string, unknown>>) => Effect.Effect<McpCallResult, McpCallError>
}

export interface ScriptedServer {
  readonly name: string
  readonly tools: ReadonlyArray<ScriptedTool>
  readonly readOnly?: boolean
  readonly transport?: McpTransportKind
  readonly status?: McpServerStatus
  readonly error?: string
}

export interface McpClientsTest {
  readonly service: McpClients["Type"]
  /** What a listChanged refresh does: the server's tools become these. */
  readonly setTools: (server: string, tools: ReadonlyArray<ScriptedTool>) => Effect.Effect<void>
  /** What a server's death does: it is `exited`, its tools gone, its calls refused. */
  readonly exit: (server: string, why: string) => Effect.Effect<void>
}

const stateOf = (server: ScriptedServer): McpServerState => ({
  name: server.name,
  transport: server.transport ?? "stdio",
  readOnly: server.readOnly === true,
  source: "test",
  status: server.status ?? "ready",
  ...(server.error !== undefined ? { error: server.error } : {}),
  tools: (server.status ?? "ready") === "ready" ? server.tools.map(({ run: _run, ...tool }) => tool) : []
})

/** The McpClients port with scripted servers: the same states, changes and call contract, no processes. */
export const makeTest = (servers: ReadonlyArray<ScriptedServer>) =>
  Effect.gen(function*() {
    const scripted = new Map(servers.map((s) => [s.name, s]))
    const state = yield* SubscriptionRef.make<ReadonlyArray<McpServerState>>(servers.map(stateOf))
    const replace = (name: string, f: (s: ScriptedServer) => ScriptedServer) =>
      Effect.suspend(() => {
        const next = f(scripted.get(name)!)
        scripted.set(name, next)
        return SubscriptionRef.update(state, (all) => all.map((s) => (s.name === name ? stateOf(next) : s)))
      })
    const service = McpClients.of({
      servers: SubscriptionRef.get(state),
      changes: state.changes,
      call: Effect.fn("McpClientsTest.call")(function*(server: string, tool: string, args: Readonly<Record<string, unknown>>) {
        return yield* Effect.suspend(() => {
          const s = scripted.get(server)
          if (s === undefined || (s.status ?? "ready") !== "ready") {
            return Effect.fail(new McpCallError({ server, tool, message: `MCP server "${server}" is not running` }))
          }
          const found = s.tools.find((t) => t.name === tool)
          return found !== undefined
            ? found.run(args)
            : Effect.succeed<McpCallResult>({ content: [{ type: "text", text: `MCP error -32602: Tool ${tool} not found` }], isError: true })
        })
      })
    })
    return {
      service,
      setTools: (server, tools) => replace(server, (s) => ({ ...s, tools })),
      exit: (server, why) => replace(server, (s) => ({ ...s, status: "exited", error: why }))
    } satisfies McpClientsTest
  })

export const layerTest = (servers: ReadonlyArray<ScriptedServer>): Layer.Layer<McpClients> =>
  Layer.effect(McpClients, Effect.map(makeTest(servers), (t) => t.service))
