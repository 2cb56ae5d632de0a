import { Clock, Effect, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { ToolCall } from "../../src/domain/Messages.js"
import type { ToolResult } from "../../src/domain/Tools.js"
import { awaitResult, type ExecuteOptions, type ToolExecutor } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor, type ToolExecutorOptions } from "../../src/services/tools/Executor.js"
import { toolCall } from "./Calls.js"
import { tempDir } from "./tempDir.js"

let counter = 0

export interface BatchExecution {
  /** Results as calls finish. */
  readonly completions: Stream.Stream<ToolResult>
  /** Every result in call order. */
  readonly results: Effect.Effect<ReadonlyArray<ToolResult>>
}

/**
 * Calls started one after another in the caller's scope, as a turn's approved calls are: closing
 * the scope interrupts the unfinished ones, which then yield `interrupted` results.
 */
export const executeBatch = (executor: ToolExecutor["Type"], calls: ReadonlyArray<ToolCall>, options?: ExecuteOptions) =>
  Effect.map(
    Effect.forEach(calls, (call) =>
      Effect.map(Effect.zip(Clock.currentTimeMillis, executor.start(call, options)), ([startedAt, fiber]) => ({ call, fiber, startedAt }))),
    (started): BatchExecution => {
      const settle = (s: (typeof started)[number]) => awaitResult(s.call, s.fiber, s.startedAt)
      return {
        completions: Stream.mergeAll(started.map((s) => Stream.fromEffect(settle(s))), { concurrency: "unbounded" }),
        results: Effect.forEach(started, settle)
      }
    }
  )

/**
 * A real temporary workspace with the built-in tools; `run` executes one call and returns its
 * result, `write`/`read` touch files directly (as the user would).
 */
export const workspaceHarness = (options: Omit<ToolExecutorOptions, "workspace"> = {}) =>
  Effect.gen(function*() {
    const root = yield* tempDir
    const workspace = Path.join(root, "ws")
    const outside = Path.join(root, "outside")
    Fs.mkdirSync(workspace)
    Fs.mkdirSync(outside)
    const executor = yield* makeToolExecutor({ workspace, ...options })
    const run = (name: string, args: unknown, execute?: ExecuteOptions) =>
      Effect.flatMap(
        executeBatch(executor, [toolCall(`call-${++counter}`, name, args)], execute),
        (batch) => Effect.map(batch.results, (results) => results[0]!)
      )
    const write = (relative: string, content: string | Uint8Array) => {
      const path = Path.join(workspace, relative)
      Fs.mkdirSync(Path.dirname(path), { recursive: true })
      Fs.writeFileSync(path, content)
      return path
    }
    const read = (relative: string) => Fs.readFileSync(Path.join(workspace, relative), "utf8")
    return { root, workspace, outside, executor, run, write, read }
  })
