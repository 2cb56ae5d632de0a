import { Effect, Schema } from "effect"
import * as Fs from "node:fs/promises"
import { ToolError } from "../../domain/Errors.js"
import type { ImageMediaType } from "../../domain/Messages.js"
import { fsTry, statIfExists } from "./FileIo.js"
import { makeTool, type ToolLimits } from "./Tool.js"

const MAX_LINE_CHARS = 2_000
const MAX_FILE_BYTES = 50 * 1024 * 1024
const BINARY_SNIFF_BYTES = 8_000
/** The providers' own per-image limit (Anthropic: 5 MB), so a Read image never makes a request fail. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024

const startsWith = (bytes: Uint8Array, prefix: ReadonlyArray<number>, at = 0) => prefix.every((b, i) => bytes[at + i] === b)

/** PNG, JPEG, GIF or WebP by their magic bytes (not the name: a renamed file is still what it is). */
export const imageTypeOf = (bytes: Uint8Array): ImageMediaType | undefined =>
  startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
    ? "image/png"
    : startsWith(bytes, [0xff, 0xd8, 0xff])
    ? "image/jpeg"
    : startsWith(bytes, [0x47, 0x49, 0x46, 0x38])
    ? "image/gif"
    : startsWith(bytes, [0x52, 0x49, 0x46, 0x46]) && startsWith(bytes, [0x57, 0x45, 0x42, 0x50], 8)
    ? "image/webp"
    : undefined

export const ReadArgs = Schema.Struct({
  file_path: Schema.String.annotations({ description: "The file to read: relative to the workspace, or absolute" }),
  offset: Schema.optionalWith(
    Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1)).annotations({
      description: "The line number to start at (1-based). Use it with limit for large files"
    }),
    { exact: true }
  ),
  limit: Schema.optionalWith(
    Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1)).annotations({ description: "How many lines to read" }),
    { exact: true }
  )
})
export type ReadArgs = typeof ReadArgs.Type

/** NUL bytes do not occur in text files; every common binary format has them early on. */
export const looksBinary = (bytes: Uint8Array): boolean => bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)

export const splitLines = (text: string): Array<string> => {
  const lines = text.split("\n")
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop()
  return lines.map((line) => (line.endsWith("\r") ? line.slice(0, -1) : line))
}

/** One line as `cat -n` prints it; very long lines are cut. */
export const numberedLine = (n: number, line: string) =>
  `${String(n).padStart(6)}\t${line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}… [line truncated]` : line}`

/**
 * `cat -n` style lines from `offset`, cut at the line limit or the output budget, whichever comes
 * first; `to` is the last line shown.
 */
export const renderLineRange = (lines: ReadonlyArray<string>, offset: number, limit: number, budget: number): { readonly text: string; readonly to: number } => {
  const out: Array<string> = []
  let used = 0
  let next = offset
  const end = Math.min(lines.length, offset - 1 + limit)
  while (next <= end) {
    const line = numberedLine(next, lines[next - 1]!)
    if (out.length > 0 && used + line.length + 1 > budget) break
    out.push(line)
    used += line.length + 1
    next++
  }
  if (next <= lines.length) {
    out.push(`[showing lines ${offset}-${next - 1} of ${lines.length}; call Read with offset=${next} to continue]`)
  }
  return { text: out.join("\n"), to: next - 1 }
}

export const makeReadTool = (limits: ToolLimits) =>
  makeTool({
    name: "Read",
    description: "Reads a text file from the workspace and returns its lines numbered like `cat -n` " +
      `(at most ${limits.readDefaultLines} lines unless you give a limit). Use offset and limit to page through ` +
      "large files. Binary files are refused. Editing a file requires reading it first.",
    parameters: ReadArgs,
    truncationHint: "call Read with offset and limit to read the rest",
    run: (args, ctx) =>
      Effect.gen(function*() {
        const path = yield* ctx.resolvePath(args.file_path)
        const display = ctx.displayPath(path)
        const stat = yield* statIfExists("Read", path, display)
        if (stat === undefined) return yield* new ToolError({ tool: "Read", message: `File does not exist: ${display}` })
        if (stat.isDirectory()) {
          return yield* new ToolError({ tool: "Read", message: `${display} is a directory; use LS to list it` })
        }
        if (stat.size > MAX_FILE_BYTES) {
          return yield* new ToolError({
            tool: "Read",
            message: `${display} is ${stat.size} bytes, more than Read handles (${MAX_FILE_BYTES}); use Grep, or Bash with head/tail/sed -n`
          })
        }
        const bytes = yield* fsTry("Read", display, () => Fs.readFile(path))
        const image = imageTypeOf(bytes)
        if (image !== undefined) {
          if (bytes.length > MAX_IMAGE_BYTES) {
            return yield* new ToolError({
              tool: "Read",
              message: `${display} is a ${image} image of ${bytes.length} bytes, more than the ${MAX_IMAGE_BYTES} bytes an image may have; make it smaller first`
            })
          }
          return { output: `[image: ${display}, ${image}, ${bytes.length} bytes]`, images: [{ media_type: image, data: bytes.toString("base64") }] }
        }
        if (looksBinary(bytes)) {
          return yield* new ToolError({
            tool: "Read",
            message: `${display} is a binary file (${bytes.length} bytes); Read only shows text. Use Bash (e.g. \`file\`, \`xxd ${display} | head\`) to inspect it`
          })
        }
        const lines = splitLines(bytes.toString("utf8"))
        const offset = args.offset ?? 1
        if (lines.length === 0 || offset > lines.length) {
          ctx.files.record(path, bytes)
          return lines.length === 0 ? `(${display} is empty)` : `(${display} has ${lines.length} lines; offset ${offset} is past the end)`
        }
        // Leave room for the continuation note inside the output budget.
        const shown = renderLineRange(lines, offset, args.limit ?? limits.readDefaultLines, limits.outputChars - 200)
        const whole = offset === 1 && shown.to === lines.length
        ctx.files.record(path, bytes, whole ? undefined : { from: offset, to: shown.to })
        return shown.text
      })
  })
