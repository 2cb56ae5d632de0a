import { Effect, Schema, Stream } from "effect"
import * as Fs from "node:fs/promises"
import { ToolError } from "../../domain/Errors.js"
import { globToRegExp } from "../../domain/Glob.js"
import { looksBinary, splitLines } from "./Read.js"
import { makeTool } from "./Tool.js"
import { walkFiles, type WalkedFile } from "./Walk.js"

const MAX_FILE_BYTES = 10 * 1024 * 1024
const MAX_LINE_CHARS = 500

export const GrepArgs = Schema.Struct({
  pattern: Schema.NonEmptyString.annotations({ description: "A JavaScript regular expression to search file contents for" }),
  path: Schema.optionalWith(Schema.String.annotations({ description: "File or directory to search (default: the workspace)" }), {
    exact: true
  }),
  glob: Schema.optionalWith(
    Schema.String.annotations({ description: "Only search files matching this glob, e.g. \"*.ts\" or \"src/**/*.{ts,tsx}\"" }),
    { exact: true }
  ),
  output_mode: Schema.optionalWith(
    Schema.Literal("files_with_matches", "content", "count").annotations({
      description: "files_with_matches (default): matching paths; content: path:line:text; count: path:matches"
    }),
    { exact: true }
  ),
  case_insensitive: Schema.optionalWith(Schema.Boolean.annotations({ description: "Ignore case (default false)" }), {
    exact: true
  }),
  max_results: Schema.optionalWith(
    Schema.Number.pipe(Schema.int(), Schema.between(1, 10_000)).annotations({
      description: "At most this many paths or lines (default 100)"
    }),
    { exact: true }
  )
})
export type GrepArgs = typeof GrepArgs.Type

interface FileHits {
  readonly file: WalkedFile
  readonly lines: ReadonlyArray<string>
  readonly count: number
}

/** A glob without `/` filters by file name, as in `*.ts`; with one it matches the path from the search root. */
export const globFilter = (glob: string | undefined): (file: WalkedFile) => boolean => {
  if (glob === undefined) return () => true
  const re = globToRegExp(glob)
  return glob.includes("/") ? (f) => re.test(f.relative) : (f) => re.test(f.relative.slice(f.relative.lastIndexOf("/") + 1))
}

const searchFile = (re: RegExp, file: WalkedFile) =>
  Effect.tryPromise(async () => {
    const handle = await Fs.open(file.path)
    try {
      const { size } = await handle.stat()
      if (size > MAX_FILE_BYTES) return undefined
      const bytes = await handle.readFile()
      return looksBinary(bytes) ? undefined : bytes.toString("utf8")
    } finally {
      await handle.close()
    }
  }).pipe(
    Effect.orElseSucceed(() => undefined),
    Effect.map((text): FileHits | undefined => {
      if (text === undefined) return undefined
      const lines: Array<string> = []
      splitLines(text).forEach((line, i) => {
        if (re.test(line)) lines.push(`${i + 1}:${line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line}`)
      })
      return lines.length === 0 ? undefined : { file, lines, count: lines.length }
    })
  )

export const GrepTool = makeTool({
  name: "Grep",
  description: "Searches file contents with a regular expression (JavaScript syntax), skipping .git, node_modules and binary files. " +
    "Returns matching file paths by default; output_mode content gives path:line:text lines, count gives match counts per file.",
  parameters: GrepArgs,
  truncationHint: "narrow the pattern, path or glob, or lower max_results",
  run: (args, ctx) =>
    Effect.gen(function*() {
      const re = yield* Effect.try({
        try: () => new RegExp(args.pattern, args.case_insensitive === true ? "i" : ""),
        catch: (cause) => new ToolError({ tool: "Grep", message: `invalid regular expression: ${cause instanceof Error ? cause.message : String(cause)}` })
      })
      const root = yield* ctx.resolvePath(args.path ?? ".")
      const mode = args.output_mode ?? "files_with_matches"
      const max = args.max_results ?? 100
      const matches = globFilter(args.glob)
      const entries: Array<string> = []
      let more = false
      yield* walkFiles("Grep", root, ctx.displayPath(root), ctx.isAllowed).pipe(
        Stream.filter(matches),
        Stream.mapEffect((file) => searchFile(re, file)),
        Stream.runForEachWhile((hits) => Effect.sync(() => {
          if (hits === undefined) return true
          const name = ctx.displayPath(hits.file.path === root ? root : `${root}/${hits.file.relative}`)
          const produced = mode === "files_with_matches"
            ? [name]
            : mode === "count"
            ? [`${name}:${hits.count}`]
            : hits.lines.map((line) => `${name}:${line}`)
          for (const entry of produced) {
            if (entries.length === max) {
              more = true
              return false
            }
            entries.push(entry)
          }
          return true
        }))
      )
      if (entries.length === 0) return "No matches found"
      const note = more ? `\n[results limited to max_results=${max}; narrow the pattern, path or glob to see the rest]` : ""
      return entries.join("\n") + note
    })
})
