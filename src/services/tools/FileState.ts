import * as Crypto from "node:crypto"

/**
 * What this workspace last saw of each file (a content hash per real path), so Edit and Write can
 * refuse to overwrite changes made on disk since then. Hashes rather than mtimes: the kernel's
 * coarse timestamps can give a file written twice within a few milliseconds one mtime.
 */
export interface FileState {
  readonly record: (path: string, content: Uint8Array | string) => void
  /** Undefined when the file matches what was seen; otherwise why it may not be overwritten. */
  readonly staleness: (path: string, display: string, current: Uint8Array | string) => string | undefined
}

const hash = (content: Uint8Array | string): string => Crypto.createHash("sha256").update(content).digest("hex")

export const makeFileState = (): FileState => {
  const seen = new Map<string, string>()
  return {
    record: (path, content) => {
      seen.set(path, hash(content))
    },
    staleness: (path, display, current) => {
      const last = seen.get(path)
      if (last === undefined) {
        return `${display} exists but has not been read in this workspace yet; Read it first, then retry`
      }
      if (last !== hash(current)) {
        return `${display} has changed on disk since it was last read (edited by the user or another program); Read it again, then retry`
      }
      return undefined
    }
  }
}
