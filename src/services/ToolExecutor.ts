import { Context, type Effect, type Fiber, type Scope, type Stream } from "effect"
import type { ToolDefinition } from "../domain/Conversation.js"
import type { ToolCall } from "../domain/Messages.js"
import type { ToolResult } from "../domain/Tools.js"

export interface ExecuteOptions {
  /** Directories outside the workspace the session's rules grant to file tools (absolute). */
  readonly allowedRoots?: ReadonlyArray<string>
}

export interface BatchExecution {
  /** Results as calls finish (the UI shows them at once). */
  readonly completions: Stream.Stream<ToolResult>
  /** Every result in the original call order (the next model request needs that order). */
  readonly results: Effect.Effect<ReadonlyArray<ToolResult>>
}

/**
 * The built-in tools of one workspace and their execution under locks. One instance per workspace,
 * shared by every session and subagent there, so the locks are workspace-wide.
 * Tool failures are results (status `error`), never Effect failures.
 */
export class ToolExecutor extends Context.Tag("baton/ToolExecutor")<ToolExecutor, {
  readonly workspace: string
  readonly definitions: ReadonlyArray<ToolDefinition>
  /**
   * Starts one call. Its lock requests are queued before this returns, so calls started one after
   * another take their locks in that order (same-file writes run in call order). Interrupting the
   * fiber interrupts the tool (a shell's whole process group is killed); the fiber then ends
   * interrupted, and the caller reports `interrupted`.
   */
  readonly start: (call: ToolCall, options?: ExecuteOptions) => Effect.Effect<Fiber.RuntimeFiber<ToolResult>, never, Scope.Scope>
  /** Runs approved calls of one turn; unfinished calls of an interrupted batch yield `interrupted` results. */
  readonly executeBatch: (calls: ReadonlyArray<ToolCall>, options?: ExecuteOptions) => Effect.Effect<BatchExecution, never, Scope.Scope>
}>() {}
