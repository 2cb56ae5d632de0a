import { Effect, Either, Schema } from "effect"
import { ToolError } from "../../domain/Errors.js"
import { applyEdit } from "../../domain/TextEdit.js"
import { writeAtomic } from "./FileIo.js"
import { readForOverwrite } from "./Overwrite.js"
import { numberedLine, splitLines } from "./Read.js"
import { makeTool } from "./Tool.js"

export const EditArgs = Schema.Struct({
  file_path: Schema.String.annotations({ description: "The file to change: relative to the workspace, or absolute" }),
  old_string: Schema.String.annotations({ description: "The exact text to replace (must be unique unless replace_all)" }),
  new_string: Schema.String.annotations({ description: "The text to put in its place" }),
  replace_all: Schema.optionalWith(
    Schema.Boolean.annotations({ description: "Replace every occurrence of old_string (default false)" }),
    { exact: true }
  )
})
export type EditArgs = typeof EditArgs.Type

const SNIPPET_CONTEXT = 3

const snippet = (content: string, firstLine: number, newLines: number): string => {
  const lines = splitLines(content)
  const from = Math.max(1, firstLine - SNIPPET_CONTEXT)
  const to = Math.min(lines.length, firstLine + newLines - 1 + SNIPPET_CONTEXT)
  return lines.slice(from - 1, to).map((line, i) => numberedLine(from + i, line)).join("\n")
}

export const EditTool = makeTool({
  name: "Edit",
  description: "Replaces exact text in a file. old_string must match the file exactly (whitespace included) and " +
    "occur once, unless replace_all is true. The file must have been read with Read first and not changed since. " +
    "With an empty old_string, creates a file that does not exist yet.",
  parameters: EditArgs,
  run: (args, ctx) =>
    Effect.gen(function*() {
      const path = yield* ctx.resolvePath(args.file_path)
      const display = ctx.displayPath(path)
      const current = yield* readForOverwrite("Edit", ctx, path, display)
      if (current === undefined && args.old_string !== "") {
        return yield* new ToolError({
          tool: "Edit",
          message: `File does not exist: ${display}. Use Write to create a file (or Edit with an empty old_string)`
        })
      }
      const applied = applyEdit(current ?? "", args, display)
      if (Either.isLeft(applied)) return yield* new ToolError({ tool: "Edit", message: applied.left })
      const { content, firstLine, newLines, replacements } = applied.right
      yield* writeAtomic("Edit", path, display, content)
      ctx.files.record(path, content)
      const what = current === undefined
        ? `Created ${display}`
        : `Edited ${display}: ${replacements} replacement${replacements === 1 ? "" : "s"}`
      return `${what}. The result around line ${firstLine}:\n${snippet(content, firstLine, newLines)}`
    })
})
