import * as Crypto from "node:crypto"
import { type FileSeen, type FilesSeen, type LineRange, staleness } from "../../domain/FilesSeen.js"
import type { FileView } from "../ToolExecutor.js"

/**
 * What one call may know and say of files: whether a file is as its conversation's model last saw
 * it, and what the call showed of one. Hashes rather than mtimes: the kernel's coarse timestamps can
 * give a file written twice within a few milliseconds one mtime.
 */
export interface FileState {
  /** The call showed the model this file (all of it, or the `lines` of a partial Read). */
  readonly record: (path: string, content: Uint8Array | string, lines?: LineRange) => void
  /** Undefined when the file matches what was seen; otherwise why it may not be overwritten. */
  readonly staleness: (path: string, display: string, current: Uint8Array | string) => string | undefined
}

const hash = (content: Uint8Array | string): string => Crypto.createHash("sha256").update(content).digest("hex")

/**
 * One call's FileState over its conversation's view: what it records reaches the view at once (a
 * later call of the same batch, waiting on the file's lock, sees it) and, through `shown`, the
 * call's result, which carries it into the conversation's history.
 */
export const makeCallFiles = (view: FileView, displayPath: (absolute: string) => string) => {
  const shown: Record<string, FileSeen> = {}
  const files: FileState = {
    record: (path, content, lines) => {
      const display = displayPath(path)
      const seen: FileSeen = { sha256: hash(content), ...(lines !== undefined ? { lines } : {}) }
      shown[display] = seen
      view.record(display, seen)
    },
    staleness: (_path, display, current) => staleness(view.current(), display, hash(current))
  }
  return { files, shown: (): FilesSeen | undefined => (Object.keys(shown).length === 0 ? undefined : shown) }
}
