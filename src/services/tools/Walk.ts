import { Chunk, Effect, Option, Stream } from "effect"
import type { Dirent } from "node:fs"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import type { ToolError } from "../../domain/Errors.js"
import { fsTry } from "./FileIo.js"

/** Directories no search tool looks into: version-control internals and installed dependencies. */
export const SKIPPED_DIRECTORIES: ReadonlySet<string> = new Set([".git", "node_modules"])

export interface WalkedFile {
  /** The path to open (symlinks already resolved and confined). */
  readonly path: string
  /** Relative to the walk's root, `/`-separated, as globs see it. */
  readonly relative: string
}

interface Pending {
  readonly dir: string
  readonly relative: string
}

const join = (relative: string, name: string) => (relative === "" ? name : `${relative}/${name}`)

const entriesOf = (dir: string): Effect.Effect<ReadonlyArray<Dirent>> =>
  Effect.tryPromise(() => Fs.readdir(dir, { withFileTypes: true })).pipe(
    Effect.map((entries) => entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))),
    // An unreadable directory is left out of a search rather than failing it.
    Effect.orElseSucceed(() => [])
  )

/** A symlinked file counts only when its target is allowed; symlinked directories are not followed (no cycles). */
const resolveLink = (path: string, isAllowed: (real: string) => boolean) =>
  Effect.tryPromise(async () => {
    const real = await Fs.realpath(path)
    const stat = await Fs.stat(real)
    return stat.isFile() && isAllowed(real) ? Option.some(real) : Option.none<string>()
  }).pipe(Effect.orElseSucceed(() => Option.none<string>()))

const step = (isAllowed: (real: string) => boolean) => (stack: ReadonlyArray<Pending>) =>
  Effect.gen(function*() {
    const rest = stack.slice(0, -1)
    const top = stack[stack.length - 1]!
    const files: Array<WalkedFile> = []
    const dirs: Array<Pending> = []
    for (const entry of yield* entriesOf(top.dir)) {
      const path = Path.join(top.dir, entry.name)
      const relative = join(top.relative, entry.name)
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRECTORIES.has(entry.name)) dirs.push({ dir: path, relative })
      } else if (entry.isFile()) {
        files.push({ path, relative })
      } else if (entry.isSymbolicLink()) {
        const real = yield* resolveLink(path, isAllowed)
        if (Option.isSome(real)) files.push({ path: real.value, relative })
      }
    }
    // Depth first, in name order: push the subdirectories reversed so the first name is popped first.
    const next = [...rest, ...dirs.reverse()]
    return [Chunk.fromIterable(files), next.length === 0 ? Option.none() : Option.some(next)] as const
  })

/**
 * Every file under `root` (or `root` itself when it is a file), depth first in name order, as a
 * stream so a search can stop early and an interrupt stops the walk between directories.
 */
export const walkFiles = (
  tool: string,
  root: string,
  display: string,
  isAllowed: (real: string) => boolean
): Stream.Stream<WalkedFile, ToolError> =>
  Stream.unwrap(
    Effect.map(fsTry(tool, display, () => Fs.stat(root)), (stat) =>
      stat.isDirectory()
        ? Stream.paginateChunkEffect<ReadonlyArray<Pending>, WalkedFile, never, never>([{ dir: root, relative: "" }], step(isAllowed))
        : Stream.make({ path: root, relative: Path.basename(root) }))
  )
