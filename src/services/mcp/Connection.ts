import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { ErrorCode, McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { Data, type Duration, Effect, type Scope } from "effect"
import type { McpLaunch } from "../../domain/McpConfig.js"
import type { McpCallResult, McpTool } from "../McpClients.js"
import type { ProcessTracker } from "../ProcessRegistry.js"
import { toResult, toTool } from "./Content.js"
import type { Sandbox } from "../Sandbox.js"
import { startStdioServer, type StdioServer } from "./StdioServer.js"

/** One started MCP server: an initialized SDK client over its transport, in the caller's scope. */

export class McpStartError extends Data.TaggedError("McpStartError")<{ readonly message: string }> {}

/** A call that got no answer; `closed` when the connection went away under it (the message then says how). */
export class McpNoAnswer extends Data.TaggedError("McpNoAnswer")<{ readonly message: string; readonly closed: boolean }> {}

export interface Connection {
  readonly serverInfo: { readonly name: string; readonly version: string } | undefined
  readonly listTools: Effect.Effect<ReadonlyArray<McpTool>, McpNoAnswer>
  readonly call: (tool: string, args: Readonly<Record<string, unknown>>) => Effect.Effect<McpCallResult, McpNoAnswer>
  /** Why the connection ended, once it has (a stdio server's exit and last stderr lines). */
  readonly ended: () => string | undefined
}

export interface ConnectOptions {
  readonly clientInfo: { readonly name: string; readonly version: string }
  readonly tracker: ProcessTracker
  readonly killGrace: Duration.DurationInput
  /** For stdio servers marked `sandbox: true`. */
  readonly sandbox?: Sandbox
  /** Bounds each tools/list page (a refresh after listChanged runs on its own, with nobody waiting). */
  readonly requestTimeoutMs: number
  /** The connection closed without Baton closing it. */
  readonly onClose: () => void
  /** The server said its tool list changed. */
  readonly onToolsChanged: () => void
}

/** setTimeout's limit: the SDK's own 60 s default would cut calls the user allowed minutes for. */
const NO_TIMEOUT = 2_147_483_647
const MAX_PAGES = 100

const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const isClosed = (cause: unknown) => cause instanceof McpError && cause.code === ErrorCode.ConnectionClosed

const httpTransport = (launch: Extract<McpLaunch, { readonly _tag: "Http" | "Sse" }>) =>
  Effect.try({
    try: () => {
      const url = new URL(launch.url)
      const requestInit = { headers: { ...launch.headers } }
      return launch._tag === "Http" ? new StreamableHTTPClientTransport(url, { requestInit }) : new SSEClientTransport(url, { requestInit })
    },
    catch: (cause) => new McpStartError({ message: `cannot start: its url is invalid (${messageOf(cause)})` })
  })

/** HTTP: the session is ended with a DELETE (streamable HTTP), bounded so shutdown never hangs on it. */
const terminate = (transport: Transport) =>
  transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined
    ? Effect.tryPromise(() => transport.terminateSession()).pipe(Effect.timeout("2 seconds"), Effect.ignore)
    : Effect.void

/** The transport to the server; for stdio, the process behind it too. */
const open = (launch: McpLaunch, options: ConnectOptions): Effect.Effect<{ readonly transport: Transport; readonly stdio?: StdioServer }, McpStartError, Scope.Scope> =>
  launch._tag === "Stdio"
    ? startStdioServer(launch, options.tracker, options.killGrace, options.sandbox).pipe(
      Effect.map((stdio) => ({ transport: stdio.transport, stdio })),
      Effect.mapError((e) => new McpStartError({ message: e.message }))
    )
    : Effect.map(httpTransport(launch), (transport) => ({ transport }))

export const connect = (launch: McpLaunch, options: ConnectOptions): Effect.Effect<Connection, McpStartError, Scope.Scope> =>
  Effect.gen(function*() {
    const { stdio, transport } = yield* open(launch, options)
    const client = new Client(options.clientInfo, { capabilities: {} })
    let closing = false
    let closed = false
    client.onclose = () => {
      closed = true
      if (!closing) options.onClose()
    }
    const ended = () => stdio?.exit() ?? (closed ? "closed the connection" : undefined)
    // Registered before the handshake, which stays interruptible (an acquire would not be): Ctrl-C
    // or the start-up timeout must be able to stop a server that never answers.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        closing = true
        yield* terminate(transport)
        yield* Effect.tryPromise(() => client.close()).pipe(Effect.ignore)
      })
    )
    yield* Effect.tryPromise({
      // The caller bounds the whole start-up (and interrupts this); no second clock here.
      try: (signal) => client.connect(transport, { signal, timeout: NO_TIMEOUT }),
      catch: (cause) => {
        const why = stdio?.exit()
        const said = stdio?.stderrTail() ?? ""
        return new McpStartError({
          message: why ?? `failed to start: ${messageOf(cause)}${said !== "" ? `; it wrote: ${said}` : ""}`
        })
      }
    })
    if (client.getServerCapabilities()?.tools?.listChanged === true) {
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => options.onToolsChanged())
    }
    const request = <A>(run: (signal: AbortSignal) => Promise<A>) =>
      Effect.tryPromise({
        try: run,
        catch: (cause) => {
          const why = isClosed(cause) ? ended() : undefined
          return new McpNoAnswer({ message: why ?? messageOf(cause), closed: why !== undefined })
        }
      })
    const listPage = (cursor: string | undefined) =>
      request((signal) => client.listTools(cursor !== undefined ? { cursor } : undefined, { signal, timeout: options.requestTimeoutMs }))
    const listTools = Effect.gen(function*() {
      if (client.getServerCapabilities()?.tools === undefined) return []
      const tools: Array<McpTool> = []
      let cursor: string | undefined
      for (let page = 0; page < MAX_PAGES; page++) {
        const result = yield* listPage(cursor)
        tools.push(...result.tools.map(toTool))
        cursor = result.nextCursor
        if (cursor === undefined || cursor === "") return tools
      }
      return yield* new McpNoAnswer({ message: `tools/list did not end after ${MAX_PAGES} pages`, closed: false })
    })
    const version = client.getServerVersion()
    return {
      serverInfo: version !== undefined ? { name: version.name, version: version.version } : undefined,
      listTools,
      call: (tool, args) =>
        Effect.map(
          request((signal) => client.callTool({ name: tool, arguments: { ...args } }, undefined, { signal, timeout: NO_TIMEOUT })),
          toResult
        ),
      ended
    } satisfies Connection
  })
