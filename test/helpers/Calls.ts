import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { ToolCallId } from "../../src/domain/Ids.js"
import type { ToolCall } from "../../src/domain/Messages.js"

export const toolCall = (id: string, name: string, args: unknown): ToolCall => ({
  type: "tool_call",
  tool_call_id: ToolCallId.make(id),
  name,
  arguments: typeof args === "string" ? args : JSON.stringify(args)
})

/** A fresh real directory (symlinks resolved), removed when the scope closes. */
export const tempDir = (prefix = "baton-tools-") =>
  Effect.acquireRelease(
    Effect.sync(() => Fs.realpathSync(Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix)))),
    (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
  )
