import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { ExecuteOptions } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor, type ToolExecutorOptions } from "../../src/services/tools/Executor.js"
import { toolCall } from "./Calls.js"
import { tempDir } from "./tempDir.js"

let counter = 0

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
        executor.executeBatch([toolCall(`call-${++counter}`, name, args)], execute),
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
