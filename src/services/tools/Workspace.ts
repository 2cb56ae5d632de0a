import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { ConfigError } from "../../domain/Errors.js"

/**
 * Where the tools work: the workspace as one real directory, and paths resolved the way the
 * confinement rule and the lock keys see them (symlinks followed, even for a file about to exist).
 */

/** The workspace as its real path; anything but an existing directory is a ConfigError. */
export const resolveWorkspace = (workspace: string) =>
  Effect.try({
    try: () => {
      const real = Fs.realpathSync.native(Path.resolve(workspace))
      if (!Fs.statSync(real).isDirectory()) throw new Error("not a directory")
      return real
    },
    catch: (cause) =>
      new ConfigError({
        source: "workspace",
        message: `the workspace ${workspace} is not a usable directory: ${cause instanceof Error ? cause.message : String(cause)}`
      })
  })

/**
 * Resolves symlinks in the longest existing prefix of an absolute path and appends the rest,
 * so a file about to be created gets the same key as every other spelling of its location.
 */
export const realpathLongestPrefix = (absolute: string): string => {
  const missing: Array<string> = []
  let current = absolute
  for (;;) {
    try {
      const real = Fs.realpathSync.native(current)
      return missing.length === 0 ? real : Path.join(real, ...missing.reverse())
    } catch {
      const parent = Path.dirname(current)
      if (parent === current) return absolute
      missing.push(Path.basename(current))
      current = parent
    }
  }
}
