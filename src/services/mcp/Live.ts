import { Duration, Effect, Either, Exit, FiberSet, Layer, Scope, SubscriptionRef } from "effect"
import { McpCallError } from "../../domain/Errors.js"
import { type McpLaunch, type McpServerConfig, scrub } from "../../domain/McpConfig.js"
import { DEFAULT_MCP_STARTUP_TIMEOUT_MS } from "../../domain/Settings.js"
import { McpClients, type McpServerState } from "../McpClients.js"
import { makeProcessRegistry, noProcessTracking, reapOrphans } from "../ProcessRegistry.js"
import { makeSandbox, type SandboxConfig } from "../Sandbox.js"
import { type Connection, connect, McpStartError } from "./Connection.js"

/**
 * services/mcp/ is the McpClients port over the official @modelcontextprotocol/sdk: this live layer
 * (every configured server started in parallel, each within its start-up timeout, its tools listed
 * and refreshed on `listChanged`), one server's connection (Connection: stdio, streamable HTTP or
 * SSE), a stdio server as a process group of its own (StdioServer), the SDK's shapes mapped to the
 * port's (Content), and a scripted layer for tests (Test).
 */

export interface McpClientsOptions {
  readonly servers: ReadonlyArray<McpServerConfig>
  readonly startupTimeoutMs?: number
  /**
   * Where stdio servers' process groups are recorded while they run (under $BATON_HOME). The groups
   * a crashed Baton left there are killed first.
   */
  readonly processRegistryDir?: string
  /** Between SIGTERM and SIGKILL, and for a server to exit once its stdin is closed. */
  readonly killGraceMs?: number
  /** The OS sandbox of stdio servers marked `sandbox: true` (the same one Bash uses). */
  readonly sandbox?: SandboxConfig
  /** How Baton introduces itself to servers. */
  readonly clientInfo?: { readonly name: string; readonly version: string }
}

interface Live {
  readonly config: McpServerConfig
  readonly connection: Connection
  readonly scope: Scope.CloseableScope
  readonly refresh: Effect.Semaphore
}

const initial = (config: McpServerConfig): McpServerState => ({
  name: config.name,
  transport: config.transport,
  readOnly: config.readOnly,
  source: config.source,
  status: "failed",
  error: "not started",
  tools: []
})

/** MCP servers carry their own marker: the shells' reaper leaves them to this one. */
const MCP_OWNER_ENV = "BATON_MCP_OWNER"

const openRegistry = (dir: string, grace: Duration.Duration) =>
  Effect.gen(function*() {
    const reaped = yield* reapOrphans(dir, grace, MCP_OWNER_ENV)
    if (reaped.length > 0) yield* Effect.logWarning(`killed ${reaped.length} MCP server process group(s) left by a crashed run`)
    return yield* makeProcessRegistry(dir, MCP_OWNER_ENV)
  })

const make = (options: McpClientsOptions) =>
  Effect.gen(function*() {
    const grace = Duration.millis(options.killGraceMs ?? 2_000)
    const startupMs = options.startupTimeoutMs ?? DEFAULT_MCP_STARTUP_TIMEOUT_MS
    const tracker = options.processRegistryDir === undefined ? noProcessTracking : yield* openRegistry(options.processRegistryDir, grace)
    // Looked for only when a server asks for it.
    const wanted = options.servers.some((s) => Either.isRight(s.launch) && s.launch.right._tag === "Stdio" && s.launch.right.sandbox === true)
    const sandbox = options.sandbox !== undefined && wanted ? yield* makeSandbox(options.sandbox) : undefined
    const fibers = yield* FiberSet.make()
    const runFork = yield* FiberSet.runtime(fibers)()
    const state = yield* SubscriptionRef.make<ReadonlyArray<McpServerState>>(options.servers.map(initial))
    const live = new Map<string, Live>()
    let closing = false
    // Each server lives in its own scope; they all stop at once (each may take its grace period).
    // Closing one that is already closed (a server that died or failed to start) does nothing.
    const scopes = new Set<Scope.CloseableScope>()
    yield* Effect.addFinalizer(() => Effect.forEach(scopes, (s) => Scope.close(s, Exit.void), { concurrency: "unbounded", discard: true }))
    // Runs first: from here on a server's connection closing is Baton's doing, not the server dying.
    yield* Effect.addFinalizer(() => Effect.sync(() => void (closing = true)))

    const update = (name: string, f: (s: McpServerState) => McpServerState) =>
      SubscriptionRef.update(state, (all) => all.map((s) => (s.name === name ? f(s) : s)))

    /**
     * The connection closed on its own: the server died. Its state says so at once (a call that saw
     * it die returns only after this, so the next request no longer offers its tools); what is left
     * of its process group is killed in the background.
     */
    const exited = (name: string) =>
      Effect.gen(function*() {
        const entry = live.get(name)
        if (entry === undefined || closing) return
        live.delete(name)
        const why = scrub(entry.connection.ended() ?? "closed the connection", entry.config.secrets)
        yield* Effect.logDebug(`MCP server "${name}" ${why}`)
        yield* update(name, (s) => ({ ...s, status: "exited", error: why, tools: [] }))
        runFork(Effect.uninterruptible(Scope.close(entry.scope, Exit.void)))
      })

    const refresh = (name: string) =>
      Effect.gen(function*() {
        const entry = live.get(name)
        if (entry === undefined) return
        const tools = yield* Effect.either(entry.refresh.withPermits(1)(entry.connection.listTools))
        if (live.get(name) !== entry) return
        if (Either.isRight(tools)) return yield* update(name, (s) => ({ ...s, tools: tools.right }))
        yield* Effect.logWarning(`MCP server "${name}" changed its tools, but listing them failed: ${scrub(tools.left.message, entry.config.secrets)}`)
      })

    const launch = (config: McpServerConfig, how: McpLaunch) =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        scopes.add(scope)
        const started = yield* Effect.gen(function*() {
          const connection = yield* connect(how, {
            clientInfo: options.clientInfo ?? { name: "baton", version: "0" },
            tracker,
            killGrace: grace,
            ...(sandbox !== undefined ? { sandbox } : {}),
            requestTimeoutMs: startupMs,
            onClose: () => runFork(exited(config.name)),
            onToolsChanged: () => runFork(refresh(config.name))
          })
          const tools = yield* Effect.mapError(connection.listTools, (e) => new McpStartError({ message: e.closed ? e.message : `failed to list its tools: ${e.message}` }))
          return { connection, tools }
        }).pipe(
          Scope.extend(scope),
          Effect.timeoutFail({
            duration: Duration.millis(startupMs),
            onTimeout: () => new McpStartError({ message: `did not start within ${startupMs} ms (mcpStartupTimeoutMs)` })
          }),
          Effect.either
        )
        if (Either.isLeft(started)) {
          yield* Scope.close(scope, Exit.void)
          return yield* update(config.name, (s) => ({ ...s, error: scrub(started.left.message, config.secrets) }))
        }
        const { connection, tools } = started.right
        live.set(config.name, { config, connection, scope, refresh: yield* Effect.makeSemaphore(1) })
        yield* update(config.name, ({ error: _none, ...s }) => ({
          ...s,
          status: "ready",
          tools,
          ...(connection.serverInfo !== undefined ? { serverInfo: connection.serverInfo } : {})
        }))
        // It may have died while it was being listed, before anything listened for that.
        if (connection.ended() !== undefined) yield* exited(config.name)
      })

    // A server that cannot start (an unset variable) is reported like one that failed to.
    const start = (config: McpServerConfig) =>
      Either.match(config.launch, {
        onLeft: (why) => update(config.name, (s) => ({ ...s, error: why })),
        onRight: (how) => launch(config, how)
      })

    yield* Effect.forEach(options.servers, start, { concurrency: "unbounded", discard: true })

    const notRunning = (server: string, tool: string) =>
      Effect.flatMap(SubscriptionRef.get(state), (all) => {
        const s = all.find((x) => x.name === server)
        const message = s === undefined ? `no MCP server "${server}" is configured` : `MCP server "${server}" is not running: it ${s.error ?? "stopped"}`
        return Effect.fail(new McpCallError({ server, tool, message }))
      })

    return McpClients.of({
      servers: SubscriptionRef.get(state),
      changes: state.changes,
      call: Effect.fn("McpClients.call")(function*(server: string, tool: string, args: Readonly<Record<string, unknown>>) {
        const entry = live.get(server)
        if (entry === undefined) return yield* notRunning(server, tool)
        return yield* entry.connection.call(tool, args).pipe(
          Effect.tapError((e) => (e.closed ? exited(server) : Effect.void)),
          Effect.mapError((e) =>
            new McpCallError({
              server,
              tool,
              message: scrub(e.closed ? `MCP server "${server}" stopped during the call: it ${e.message}` : `MCP server "${server}" gave no answer: ${e.message}`, entry.config.secrets)
            })
          )
        )
      })
    })
  })

/** The configured servers, started when the layer is built (in parallel) and stopped with its scope. */
export const layer = (options: McpClientsOptions): Layer.Layer<McpClients> => Layer.scoped(McpClients, make(options))
