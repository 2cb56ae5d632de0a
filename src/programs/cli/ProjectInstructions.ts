import * as Effect from "effect/Effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { ConfigError } from "../../domain/Errors.js"

/**
 * The project's instructions for the model, in the files users already write for other agents:
 * `$BATON_HOME/AGENTS.md`, then one file per directory from the repository's root (the nearest
 * directory with `.git`, upward from the workspace; without one, the workspace alone) down to the
 * workspace, the closest last so it wins where they disagree. A directory's `AGENTS.md`, or its
 * `CLAUDE.md` when it has none. They are joined into a new conversation's system prompt, each under
 * its path; a conversation keeps the prompt it was created with (its requests stay the same, and
 * the model's cache with them), so an edited file applies to the next new conversation.
 */

export interface InstructionFile {
  readonly path: string
  readonly content: string
}

const NAMES = ["AGENTS.md", "CLAUDE.md"] as const

const isFile = (path: string): boolean => {
  try {
    return Fs.statSync(path).isFile()
  } catch {
    return false
  }
}

/** The directories from the repository root down to the workspace (the workspace alone outside a repository). */
export const instructionDirs = (workspace: string): ReadonlyArray<string> => {
  const chain: Array<string> = []
  for (let dir = workspace; ; dir = Path.dirname(dir)) {
    chain.unshift(dir)
    if (Fs.existsSync(Path.join(dir, ".git"))) return chain
    if (Path.dirname(dir) === dir) return [workspace]
  }
}

const read = (path: string): Effect.Effect<InstructionFile, ConfigError> =>
  Effect.try({
    try: () => ({ path, content: Fs.readFileSync(path, "utf8").trim() }),
    catch: (cause) => new ConfigError({ source: path, message: `cannot read ${path}: ${cause instanceof Error ? cause.message : String(cause)}` })
  })

/** The instruction files in force, in prompt order; empty files are left out. */
export const findInstructions = (home: string, workspace: string): Effect.Effect<ReadonlyArray<InstructionFile>, ConfigError> => {
  const own = Path.join(home, "AGENTS.md")
  const project = instructionDirs(workspace).flatMap((dir) => {
    const found = NAMES.map((name) => Path.join(dir, name)).find(isFile)
    return found === undefined ? [] : [found]
  })
  const paths = [...(isFile(own) ? [own] : []), ...project.filter((p) => p !== own)]
  return Effect.map(Effect.forEach(paths, read), (files) => files.filter((f) => f.content !== ""))
}

/** The system prompt with the instructions after it, each under its path, the closest last. */
export const withInstructions = (systemPrompt: string, files: ReadonlyArray<InstructionFile>): string =>
  files.length === 0 ? systemPrompt : [
    systemPrompt,
    "",
    "# Project instructions",
    "The user's instruction files follow, each under its path. Where they disagree, the later (closer to the workspace) one wins.",
    ...files.flatMap((f) => ["", `## ${f.path}`, "", f.content])
  ].join("\n")

/** One line naming the files, for a header: inside the workspace relative to it, elsewhere in full. */
export const instructionsNote = (files: ReadonlyArray<InstructionFile>, workspace: string): string | undefined => {
  if (files.length === 0) return undefined
  const shown = files.map((f) => {
    const relative = Path.relative(workspace, f.path)
    return relative.startsWith("..") || Path.isAbsolute(relative) ? f.path : relative
  })
  return `instructions: ${shown.join(", ")}`
}
