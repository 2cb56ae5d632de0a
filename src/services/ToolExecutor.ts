import { Cause, Clock, Context, Effect, Exit, Fiber, type Scope } from "effect"
import type { ToolDefinition } from "../domain/Conversation.js"
import type { TaskEvent } from "../domain/Events.js"
import { emptyView, type FileSeen, type FilesView, observeAll } from "../domain/FilesSeen.js"
import type { ToolCall } from "../domain/Messages.js"
import type { SandboxStatus } from "../domain/Sandbox.js"
import { interruptedResult, type ToolResult } from "../domain/Tools.js"

export interface ExecuteOptions {
  /** Directories outside the workspace the session's rules grant to file tools (absolute). */
  readonly allowedRoots?: ReadonlyArray<string>
  /**
   * What the model of the call's conversation last saw of each file: Edit and Write check it, and
   * every tool that shows a file updates it at once (a later call of the same batch sees it). Without
   * one, the executor keeps its own (a caller that drives no conversation).
   */
  readonly files?: FileView
}

/**
 * One conversation's view of the files its model saw, held by the client driving it. Rebuilt from
 * the conversation's items (`observe`), and written by the tools as they show a file (`record`).
 */
export interface FileView {
  readonly current: () => FilesView
  readonly record: (display: string, seen: FileSeen) => void
  readonly observe: (events: Iterable<TaskEvent>) => void
}

export const makeFileView = (): FileView => {
  let view = emptyView
  return {
    current: () => view,
    record: (display, seen) => {
      const next = new Map(view)
      next.set(display, { seen, compacted: false })
      view = next
    },
    observe: (events) => {
      view = observeAll(view, events)
    }
  }
}

/**
 * The tools of one workspace (the built-ins and its MCP servers') and their execution under locks.
 * One instance per workspace, shared by every session and subagent there, so the locks are
 * workspace-wide. Tool failures are results (status `error`), never Effect failures.
 */
export class ToolExecutor extends Context.Tag("baton/ToolExecutor")<ToolExecutor, {
  readonly workspace: string
  /** Whether Bash commands run inside an OS sandbox (absent: an executor without one, as `off`). */
  readonly sandbox?: SandboxStatus
  /**
   * The tools offered now. MCP servers change it (a listChanged, a server that died), so a session
   * reads it before every model request; it is the same array until something changed.
   */
  readonly definitions: Effect.Effect<ReadonlyArray<ToolDefinition>>
  /**
   * Starts one call. Its lock requests are queued before this returns, so calls started one after
   * another take their locks in that order (same-file writes run in call order). Interrupting the
   * fiber interrupts the tool (a shell's whole process group is killed); the fiber then ends
   * interrupted, and `awaitResult` reports `interrupted`.
   */
  readonly start: (call: ToolCall, options?: ExecuteOptions) => Effect.Effect<Fiber.RuntimeFiber<ToolResult>, never, Scope.Scope>
}>() {}

/**
 * The result of a started call, whatever became of its fiber: its own result, `interrupted` when it
 * was interrupted, an error result when it died. `startedAtMs` lets the last two carry how long the
 * call had been going.
 */
export const awaitResult = Effect.fn("ToolExecutor.awaitResult")(
  function*(call: ToolCall, fiber: Fiber.Fiber<ToolResult>, startedAtMs?: number) {
    const exit = yield* Fiber.await(fiber)
    if (Exit.isSuccess(exit)) return exit.value
    const now = yield* Clock.currentTimeMillis
    const duration = startedAtMs === undefined ? 0 : Math.max(0, now - startedAtMs)
    if (Cause.isInterruptedOnly(exit.cause)) return interruptedResult(call.tool_call_id, duration)
    return {
      tool_call_id: call.tool_call_id,
      status: "error",
      output: `internal error running ${call.name}: ${Cause.pretty(exit.cause)}`,
      duration_ms: duration
    } satisfies ToolResult
  }
)
