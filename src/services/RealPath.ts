import * as Fs from "node:fs"
import * as Path from "node:path"

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
