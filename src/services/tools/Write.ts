import { Effect, Schema } from "effect"
import { writeAtomic } from "./FileIo.js"
import { lineCount, readForOverwrite } from "./Overwrite.js"
import { makeTool } from "./Tool.js"

export const WriteArgs = Schema.Struct({
  file_path: Schema.String.annotations({ description: "The file to write: relative to the workspace, or absolute" }),
  content: Schema.String.annotations({ description: "The complete new content of the file" })
})
export type WriteArgs = typeof WriteArgs.Type

export const WriteTool = makeTool({
  name: "Write",
  description: "Writes a file, replacing it completely, and creates missing parent directories. " +
    "An existing file must have been read with Read first (and not changed since). Prefer Edit for changes to existing files.",
  parameters: WriteArgs,
  run: (args, ctx) =>
    Effect.gen(function*() {
      const path = yield* ctx.resolvePath(args.file_path)
      const display = ctx.displayPath(path)
      const previous = yield* readForOverwrite("Write", ctx, path, display)
      yield* writeAtomic("Write", path, display, args.content)
      ctx.files.record(path, args.content)
      const lines = lineCount(args.content)
      return previous === undefined
        ? `Created ${display} (${lines} lines)`
        : `Overwrote ${display} (${lines} lines, was ${lineCount(previous)})`
    })
})
