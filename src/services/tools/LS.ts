import { Effect, Schema } from "effect"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { ToolError } from "../../domain/Errors.js"
import { globToRegExp } from "../../domain/Glob.js"
import { fsTry } from "./FileIo.js"
import { makeTool } from "./Tool.js"

const MAX_ENTRIES = 1_000

export const LSArgs = Schema.Struct({
  path: Schema.optionalWith(Schema.String.annotations({ description: "The directory to list (default: the workspace)" }), {
    exact: true
  }),
  ignore: Schema.optionalWith(
    Schema.Array(Schema.String).annotations({ description: "Glob patterns of names to leave out, e.g. [\"*.log\"]" }),
    { exact: true }
  )
})
export type LSArgs = typeof LSArgs.Type

export const LSTool = makeTool({
  name: "LS",
  description: "Lists one directory: subdirectories end with /, symlinks show their target. Use Glob to find files recursively.",
  parameters: LSArgs,
  truncationHint: "use Glob with a narrower pattern",
  run: (args, ctx) =>
    Effect.gen(function*() {
      const dir = yield* ctx.resolvePath(args.path ?? ".")
      const display = ctx.displayPath(dir)
      const stat = yield* fsTry("LS", display, () => Fs.stat(dir))
      if (!stat.isDirectory()) return yield* new ToolError({ tool: "LS", message: `${display} is a file, not a directory; use Read` })
      const ignore = (args.ignore ?? []).map(globToRegExp)
      const entries = yield* fsTry("LS", display, () => Fs.readdir(dir, { withFileTypes: true }))
      const lines: Array<string> = []
      for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
        if (ignore.some((re) => re.test(entry.name))) continue
        if (entry.isDirectory()) lines.push(`${entry.name}/`)
        else if (entry.isSymbolicLink()) {
          const target = yield* Effect.tryPromise(() => Fs.readlink(Path.join(dir, entry.name))).pipe(Effect.orElseSucceed(() => "?"))
          lines.push(`${entry.name} -> ${target}`)
        } else lines.push(entry.name)
      }
      const header = `${display}/`
      if (lines.length === 0) return `${header}\n(empty directory)`
      const note = lines.length > MAX_ENTRIES
        ? `\n[${lines.length - MAX_ENTRIES} more entries not shown; use Glob with a narrower pattern]`
        : ""
      return `${header}\n${lines.slice(0, MAX_ENTRIES).join("\n")}${note}`
    })
})
