import { Effect } from "effect"
import * as Fs from "node:fs/promises"
import { ToolError } from "../../domain/Errors.js"
import { fsTry, statIfExists } from "./FileIo.js"
import { looksBinary } from "./Read.js"
import type { ToolContext } from "./Tool.js"

/**
 * The current text of a file a tool is about to replace, or undefined when it does not exist.
 * Refuses directories, binary files, and files this workspace has not seen in their current state,
 * so a change the user made on disk is never silently overwritten.
 */
export const readForOverwrite = (tool: string, ctx: ToolContext, path: string, display: string) =>
  Effect.gen(function*() {
    const stat = yield* statIfExists(tool, path, display)
    if (stat === undefined) return undefined
    if (stat.isDirectory()) return yield* new ToolError({ tool, message: `${display} is a directory` })
    const bytes = yield* fsTry(tool, display, () => Fs.readFile(path))
    if (looksBinary(bytes)) {
      return yield* new ToolError({ tool, message: `${display} is a binary file; ${tool} only changes text files` })
    }
    const stale = ctx.files.staleness(path, display, bytes)
    if (stale !== undefined) return yield* new ToolError({ tool, message: stale })
    return bytes.toString("utf8")
  })

export const lineCount = (text: string): number =>
  text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0)
