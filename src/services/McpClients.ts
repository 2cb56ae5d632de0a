import { Context, Effect, Layer, Stream } from "effect"
import { McpCallError } from "../domain/Errors.js"
import type { McpTransportKind } from "../domain/McpConfig.js"

/** What a server says about a tool. Hints from a server Baton does not control: shown, trusted for nothing. */
export interface McpToolAnnotations {
  readonly title?: string
  readonly readOnlyHint?: boolean
  readonly destructiveHint?: boolean
  readonly idempotentHint?: boolean
  readonly openWorldHint?: boolean
}

/** One tool as its server listed it. */
export interface McpTool {
  /** The server's own name for it (the model sees `mcp__<server>__<name>`, sanitised). */
  readonly name: string
  readonly description: string
  /** JSON Schema of the arguments, as the server sent it. */
  readonly inputSchema: Readonly<Record<string, unknown>>
  readonly annotations: McpToolAnnotations
}

export type McpServerStatus = "ready" | "failed" | "exited"

/** One configured server and what became of it. */
export interface McpServerState {
  /** As in tool names and rules (`mcp__<name>__…`). */
  readonly name: string
  readonly transport: McpTransportKind
  /** From the settings: its calls take the shared lock. */
  readonly readOnly: boolean
  /** The file that configured it. */
  readonly source: string
  /** `ready`: started and listed; `failed`: never started; `exited`: started, then died or closed. */
  readonly status: McpServerStatus
  /** Why it failed or exited, said of the server ("exited with code 1: …"); secrets from the environment hidden. */
  readonly error?: string
  /** Its tools while ready, in the server's order; none otherwise. */
  readonly tools: ReadonlyArray<McpTool>
  /** The name and version the server gave when it started. */
  readonly serverInfo?: { readonly name: string; readonly version: string }
}

/** Content of a tool result, as MCP defines it. */
export type McpContent =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image" | "audio"; readonly mimeType: string; readonly data: string }
  | { readonly type: "resource"; readonly uri: string; readonly mimeType?: string; readonly text?: string; readonly blob?: string }
  | { readonly type: "resource_link"; readonly uri: string; readonly name: string; readonly description?: string }

export interface McpCallResult {
  readonly content: ReadonlyArray<McpContent>
  /** The tool says it failed: the model sees an error result. */
  readonly isError: boolean
  readonly structuredContent?: unknown
}

/**
 * The MCP servers of a session's workspace, started with it and stopped with its scope (stdio
 * children and their whole process groups killed, HTTP sessions terminated). A server that fails to
 * start or dies is a state, never a failure of this service: the session works without its tools.
 */
export class McpClients extends Context.Tag("baton/McpClients")<McpClients, {
  /** Every configured server, in configuration order. The same array until something changes. */
  readonly servers: Effect.Effect<ReadonlyArray<McpServerState>>
  /** The servers now, then after every change (a listChanged refresh, a server that died). */
  readonly changes: Stream.Stream<ReadonlyArray<McpServerState>>
  /**
   * Calls one tool. Interrupting the fiber cancels the call (`notifications/cancelled` reaches the
   * server). Fails only when no answer can come: the server is not running, died during the call,
   * or broke the protocol. It has no timeout of its own: the caller decides how long a call may take.
   */
  readonly call: (server: string, tool: string, args: Readonly<Record<string, unknown>>) => Effect.Effect<McpCallResult, McpCallError>
}>() {}

const nothing: ReadonlyArray<McpServerState> = []

/** No MCP servers configured: nothing starts, and the MCP client library is never loaded. */
export const none: McpClients["Type"] = McpClients.of({
  servers: Effect.succeed(nothing),
  changes: Stream.make(nothing),
  call: (server, tool) => Effect.fail(new McpCallError({ server, tool, message: `no MCP server "${server}" is configured` }))
})

export const layerNone: Layer.Layer<McpClients> = Layer.succeed(McpClients, none)
