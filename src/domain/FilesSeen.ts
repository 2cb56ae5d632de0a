import { Schema } from "effect"
import type { TaskEvent } from "./Events.js"

/**
 * What the model of one conversation last saw of each file, so Edit and Write refuse to overwrite a
 * file changed since. It belongs to the conversation: a tool result that showed a file (Read, and
 * the Edit or Write that changed it) carries the file's content hash in `files`, and the view is
 * rebuilt from the conversation's items in order. It therefore survives a crash, another process
 * continuing the conversation, and a fork (whose copied items carry it).
 */

/** The lines of a Read that showed only part of a file (1-based, inclusive). */
export const LineRange = Schema.Struct({ from: Schema.Int, to: Schema.Int })
export type LineRange = typeof LineRange.Type

export const FileSeen = Schema.Struct({
  /** The whole file's content hash (sha256, hex) when the tool looked at it. */
  sha256: Schema.String,
  lines: Schema.optionalWith(LineRange, { exact: true })
})
export type FileSeen = typeof FileSeen.Type

/** Keyed by the path as shown to the model: relative inside the workspace, absolute elsewhere. */
export const FilesSeen = Schema.Record({ key: Schema.String, value: FileSeen })
export type FilesSeen = typeof FilesSeen.Type

export interface SeenEntry {
  readonly seen: FileSeen
  /**
   * A compaction replaced the context that showed it and its summary does not name the file: the
   * model no longer has its content, so it must Read it again.
   */
  readonly compacted: boolean
}

export type FilesView = ReadonlyMap<string, SeenEntry>

export const emptyView: FilesView = new Map()

/**
 * The view after one item of the conversation (the same map when the item changes nothing).
 * A subagent's events (with `origin`) belong to its own conversation and change nothing here.
 */
export const observe = (view: FilesView, event: TaskEvent): FilesView => {
  if (event.origin !== undefined) return view
  switch (event.type) {
    case "tool_return": {
      if (event.files === undefined || event.status !== "success") return view
      const next = new Map(view)
      for (const [path, seen] of Object.entries(event.files)) next.set(path, { seen, compacted: false })
      return next
    }
    case "compaction_end": {
      if (event.status !== "ok" || view.size === 0) return view
      return new Map([...view].map(([path, entry]) => [path, { ...entry, compacted: true }]))
    }
    case "summary_message": {
      // A summary that names a file keeps it in view: the model still knows of it from the summary.
      const named = [...view].filter(([path, entry]) => entry.compacted && event.content.includes(path))
      if (named.length === 0) return view
      const next = new Map(view)
      for (const [path, entry] of named) next.set(path, { ...entry, compacted: false })
      return next
    }
    default:
      return view
  }
}

export const observeAll = (view: FilesView, events: Iterable<TaskEvent>): FilesView => {
  let next = view
  for (const event of events) next = observe(next, event)
  return next
}

/** Undefined when the file is as the model last saw it; otherwise why it may not be overwritten. */
export const staleness = (view: FilesView, display: string, sha256: string): string | undefined => {
  const entry = view.get(display)
  if (entry === undefined) {
    return `${display} exists but has not been read in this conversation yet; Read it first, then retry`
  }
  if (entry.seen.sha256 !== sha256) {
    return `${display} has changed on disk since it was last read (edited by the user or another program); Read it again, then retry`
  }
  if (entry.compacted) {
    return `${display} was read before the conversation was compacted, and the summary does not mention it, so its content is no longer in view; Read it again, then retry`
  }
  return undefined
}
