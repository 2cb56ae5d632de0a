import { Clock, Duration, Effect, Either, Layer } from "effect"
import * as Path from "node:path"
import { type ConfigError, ToolError } from "../../domain/Errors.js"
import type { ToolCall } from "../../domain/Messages.js"
import { type Confinement, confinePath, ResourceKey, resourceKey } from "../../domain/ResourceKey.js"
import type { ToolResult } from "../../domain/Tools.js"
import { realpathLongestPrefix, resolveWorkspace } from "./Workspace.js"
import { builtinTools } from "./Builtin.js"
import { makeCallFiles } from "./FileState.js"
import { makeProcessRegistry, noProcessTracking, reapOrphans } from "../ProcessRegistry.js"
import {
  defaultToolLimits,
  type PreparedCall,
  type Tool,
  type ToolContext,
  type ToolLimits,
  type ToolOutput,
  truncateHead
} from "./Tool.js"
import { McpClients } from "../McpClients.js"
import { type ExecuteOptions, type FileView, makeFileView, ToolExecutor } from "../ToolExecutor.js"
import { type Catalog, mcpCatalog, staticCatalog } from "./McpTools.js"
import { unsafeMakeWorkspaceLocks } from "./WorkspaceLocks.js"
import { makeSandbox, type SandboxConfig } from "../Sandbox.js"

/**
 * services/tools/ is the ToolExecutor of one workspace: this module (plan a call, take its locks,
 * run it), the workspace and its path rules (Workspace), the fair readers/writer and per-file locks
 * (FairLock, WorkspaceLocks), the built-in tools (Read, Write, Edit, Bash, Grep, Glob, LS) and the
 * tools of the workspace's MCP servers, reached through the McpClients port (McpTools); the process
 * groups a shell leaves are recorded by the shared ../ProcessRegistry.
 */

export interface ToolExecutorOptions {
  /** The workspace root; it must exist. */
  readonly workspace: string
  /** The tools to offer; the built-in coding tools when absent (tests pass fakes). */
  readonly tools?: ReadonlyArray<Tool> | ((limits: ToolLimits) => ReadonlyArray<Tool>)
  readonly limits?: Partial<ToolLimits>
  /**
   * A directory (e.g. under $BATON_HOME) where running shell groups are recorded. When given, the
   * executor first kills the groups a crashed Baton process left there, then records its own.
   */
  readonly processRegistryDir?: string
  /** The workspace's MCP servers: their tools are offered after the built-ins, as `mcp__<server>__<tool>`. */
  readonly mcp?: McpClients["Type"]
  /** The OS sandbox Bash commands run in; absent: none (mode off). */
  readonly sandbox?: SandboxConfig
}

interface Planned {
  readonly tool: Tool
  readonly prepared: PreparedCall
  readonly key: ResourceKey
}

const parseArguments = (raw: string): Either.Either<unknown, string> => {
  // Models send "" for a tool without arguments.
  if (raw.trim() === "") return Either.right({})
  try {
    const value: unknown = JSON.parse(raw)
    return Either.right(value)
  } catch (cause) {
    return Either.left(cause instanceof Error ? cause.message : String(cause))
  }
}

const resultOf = (call: ToolCall, output: ToolOutput, durationMs: number, files?: ToolResult["files"]): ToolResult => ({
  tool_call_id: call.tool_call_id,
  status: output.isError === true ? "error" : "success",
  output: output.output,
  ...(output.exit_code !== undefined ? { exit_code: output.exit_code } : {}),
  ...(output.stdout !== undefined ? { stdout: output.stdout } : {}),
  ...(output.stderr !== undefined ? { stderr: output.stderr } : {}),
  ...(output.images !== undefined && output.images.length > 0 ? { images: output.images } : {}),
  ...(files !== undefined ? { files } : {}),
  duration_ms: durationMs
})

const startRegistry = (dir: string, limits: ToolLimits) =>
  Effect.gen(function*() {
    const reaped = yield* reapOrphans(dir, Duration.millis(limits.killGraceMs))
    if (reaped.length > 0) yield* Effect.logWarning(`killed ${reaped.length} shell process group(s) left by a crashed run`)
    return yield* makeProcessRegistry(dir)
  })

export const makeToolExecutor = (options: ToolExecutorOptions) =>
  Effect.gen(function*() {
    const workspace = yield* resolveWorkspace(options.workspace)
    const limits: ToolLimits = { ...defaultToolLimits, ...options.limits }
    const locks = unsafeMakeWorkspaceLocks()
    // For callers that drive no conversation (the session passes its conversation's own view).
    const ownView = makeFileView()
    const processes = options.processRegistryDir === undefined
      ? noProcessTracking
      : yield* startRegistry(options.processRegistryDir, limits)
    const sandbox = options.sandbox === undefined ? undefined : yield* makeSandbox(options.sandbox)
    const tools = typeof options.tools === "function" ? options.tools(limits) : options.tools ?? builtinTools(limits, sandbox?.status.active === true)
    const catalog = options.mcp === undefined ? Effect.succeed(staticCatalog(tools)) : mcpCatalog(options.mcp, tools, limits.mcpTimeoutMs)

    const confinementFor = (execution: ExecuteOptions | undefined): Confinement => ({
      workspace,
      allowedRoots: (execution?.allowedRoots ?? []).map((root) => realpathLongestPrefix(Path.resolve(workspace, root))),
      realpath: realpathLongestPrefix
    })

    const plan = (call: ToolCall, confinement: Confinement, offered: Catalog): Either.Either<Planned, string> =>
      Either.gen(function*() {
        const tool = offered.byName.get(call.name)
        if (tool === undefined) return yield* Either.left(offered.unknown(call.name))
        const input = yield* Either.mapLeft(
          parseArguments(call.arguments),
          (reason) => `Invalid arguments for ${call.name}: they are not valid JSON (${reason}); send one JSON object matching the tool's schema`
        )
        const prepared = yield* tool.prepare(input)
        const key = tool.readOnly === true
          ? ResourceKey.Shared()
          : yield* Either.mapLeft(resourceKey(call.name, prepared.args, confinement), (e) => e.message)
        return { tool, prepared, key }
      })

    const displayPath = (absolute: string) => {
      const relative = Path.relative(workspace, absolute)
      if (relative === "") return "."
      return relative.startsWith("..") || Path.isAbsolute(relative) ? absolute : relative
    }

    const contextFor = (call: ToolCall, tool: Tool, confinement: Confinement, files: ToolContext["files"]): ToolContext => ({
      callId: call.tool_call_id,
      workspace,
      resolvePath: (raw) =>
        Either.match(confinePath(raw, confinement), {
          onLeft: (e) => Effect.fail(new ToolError({ tool: tool.name, message: e.message })),
          onRight: Effect.succeed
        }),
      isAllowed: (real) => Either.isRight(confinePath(real, { ...confinement, realpath: (p) => p })),
      displayPath,
      files,
      processes,
      limits,
      ...(sandbox !== undefined ? { sandbox } : {}),
      roots: confinement.allowedRoots ?? []
    })

    const runPlanned = (call: ToolCall, planned: Planned, confinement: Confinement, view: FileView) =>
      Effect.gen(function*() {
        const began = yield* Clock.currentTimeMillis
        const files = makeCallFiles(view, displayPath)
        const output = yield* planned.prepared.run(contextFor(call, planned.tool, confinement, files.files)).pipe(
          Effect.catchTag("ToolError", (e) => Effect.succeed<ToolOutput>({ output: e.message, isError: true })),
          // A bug in one tool becomes that call's error result instead of taking the session down.
          Effect.catchAllDefect((defect) =>
            Effect.succeed<ToolOutput>({ output: `${call.name} failed unexpectedly: ${String(defect)}`, isError: true })
          )
        )
        const ended = yield* Clock.currentTimeMillis
        const shown = { ...output, output: truncateHead(output.output, limits.outputChars, planned.tool.truncationHint) }
        // A failed call changed nothing the model can rely on (Read, Edit and Write record only on success).
        return resultOf(call, shown, ended - began, shown.isError === true ? undefined : files.shown())
      })

    const start = Effect.fn("ToolExecutor.start")(
      function*(call: ToolCall, execution?: ExecuteOptions) {
        const scope = yield* Effect.scope
        const confinement = confinementFor(execution)
        const planned = plan(call, confinement, yield* catalog)
        // Queueing the locks and forking happen in one uninterruptible step: the ticket is always
        // handed to a fiber whose `ensuring` returns it, even if that fiber is interrupted at once.
        return yield* Effect.uninterruptible(Effect.suspend(() => {
          if (Either.isLeft(planned)) {
            return Effect.forkIn(Effect.succeed(resultOf(call, { output: planned.left, isError: true }, 0)), scope)
          }
          const ticket = locks.unsafeEnqueue(planned.right.key)
          const body = Effect.interruptible(Effect.zipRight(ticket.granted, runPlanned(call, planned.right, confinement, execution?.files ?? ownView)))
          return Effect.forkIn(Effect.ensuring(body, ticket.release), scope)
        }))
      }
    )

    return ToolExecutor.of({
      workspace,
      ...(sandbox !== undefined ? { sandbox: sandbox.status } : {}),
      definitions: Effect.map(catalog, (c) => c.definitions),
      start
    })
  })

/** The executor of one workspace with the built-in tools (or those given). */
export const layer = (options: ToolExecutorOptions) => Layer.effect(ToolExecutor, makeToolExecutor(options))

/** The same, with the tools of the workspace's MCP servers. */
export const layerWithMcp = (options: Omit<ToolExecutorOptions, "mcp">): Layer.Layer<ToolExecutor, ConfigError, McpClients> =>
  Layer.effect(ToolExecutor, Effect.flatMap(McpClients, (mcp) => makeToolExecutor({ ...options, mcp })))
