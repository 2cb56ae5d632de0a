import { Effect, Schema, Stream } from "effect"
import * as Fs from "node:fs/promises"
import { globToRegExp } from "../../domain/Glob.js"
import { makeTool } from "./Tool.js"
import { walkFiles } from "./Walk.js"

const MAX_RESULTS = 1_000

export const GlobArgs = Schema.Struct({
  pattern: Schema.NonEmptyString.annotations({
    description: "A glob over paths relative to `path`: `**` crosses directories, e.g. \"**/*.ts\" or \"src/*.{ts,tsx}\""
  }),
  path: Schema.optionalWith(Schema.String.annotations({ description: "The directory to search (default: the workspace)" }), {
    exact: true
  })
})
export type GlobArgs = typeof GlobArgs.Type

const mtimeOf = (path: string) =>
  Effect.tryPromise(() => Fs.stat(path)).pipe(
    Effect.map((s) => s.mtimeMs),
    Effect.orElseSucceed(() => 0)
  )

export const GlobTool = makeTool({
  name: "Glob",
  description: "Finds files whose path matches a glob pattern, newest first (by modification time). " +
    "Skips .git and node_modules. Use Grep to search contents.",
  parameters: GlobArgs,
  truncationHint: "use a narrower pattern or path",
  run: (args, ctx) =>
    Effect.gen(function*() {
      const root = yield* ctx.resolvePath(args.path ?? ".")
      const re = globToRegExp(args.pattern.replace(/^\.\//, ""))
      const found = yield* walkFiles("Glob", root, ctx.displayPath(root), ctx.isAllowed).pipe(
        Stream.filter((file) => re.test(file.relative)),
        Stream.mapEffect((file) => Effect.map(mtimeOf(file.path), (mtime) => ({ name: `${root}/${file.relative}`, mtime }))),
        Stream.runCollect
      )
      if (found.length === 0) return "No files found"
      // Newest first; the name breaks ties so equal mtimes give a stable order.
      const sorted = [...found].sort((a, b) => b.mtime - a.mtime || (a.name < b.name ? -1 : 1))
      const shown = sorted.slice(0, MAX_RESULTS).map((f) => ctx.displayPath(f.name))
      const note = sorted.length > MAX_RESULTS
        ? `\n[${sorted.length - MAX_RESULTS} more files not shown; use a narrower pattern or path]`
        : ""
      return shown.join("\n") + note
    })
})
