import * as Either from "effect/Either"
import type { ToolCall } from "../domain/Messages.js"
import { applyEdit } from "../domain/TextEdit.js"

/**
 * How a tool call reads to a person: the tool, its subject (the path, the command, the pattern) and,
 * for changes, the change itself. Pure: file contents are passed in, so an approval prompt can show
 * exactly what Edit will do to the file as it is now.
 */
export interface CallHeader {
  readonly tool: string
  readonly subject: string
}

export type DiffLine =
  | { readonly _tag: "Context"; readonly line: number; readonly text: string }
  | { readonly _tag: "Removed"; readonly line: number; readonly text: string }
  | { readonly _tag: "Added"; readonly line: number; readonly text: string }
  | { readonly _tag: "Note"; readonly text: string }

const args = (call: ToolCall): Record<string, unknown> => {
  try {
    const value: unknown = JSON.parse(call.arguments === "" ? "{}" : call.arguments)
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

const oneLine = (text: string, max = 160): string => {
  const lines = text.split("\n")
  const first = lines[0]!.length > max ? `${lines[0]!.slice(0, max - 1)}…` : lines[0]!
  return lines.length > 1 ? `${first} … (+${lines.length - 1} lines)` : first
}

export const callHeader = (call: ToolCall): CallHeader => {
  const a = args(call)
  const path = str(a["file_path"]) ?? str(a["path"])
  switch (call.name) {
    case "Bash":
      return { tool: "Bash", subject: oneLine(str(a["command"]) ?? call.arguments) }
    case "Read": {
      const offset = typeof a["offset"] === "number" ? a["offset"] : undefined
      const limit = typeof a["limit"] === "number" ? a["limit"] : undefined
      const range = offset !== undefined || limit !== undefined
        ? ` (lines ${offset ?? 1}${limit !== undefined ? `–${(offset ?? 1) + limit - 1}` : "–"})`
        : ""
      return { tool: "Read", subject: `${path ?? "?"}${range}` }
    }
    case "Grep":
    case "Glob": {
      const pattern = str(a["pattern"]) ?? "?"
      return { tool: call.name, subject: path !== undefined ? `${pattern} in ${path}` : pattern }
    }
    case "LS":
      return { tool: "LS", subject: path ?? "." }
    default:
      return { tool: call.name, subject: path ?? oneLine(call.arguments, 120) }
  }
}

/** The path a file tool call names, if any (what the approval prompt reads to preview an edit). */
export const callPath = (call: ToolCall): string | undefined => {
  const a = args(call)
  return str(a["file_path"]) ?? str(a["path"])
}

const CONTEXT = 2

/** Drops lines both sides share at the start and the end, so a one-word edit shows one line changed. */
const trimCommon = (removed: ReadonlyArray<string>, added: ReadonlyArray<string>) => {
  let head = 0
  while (head < removed.length && head < added.length && removed[head] === added[head]) head++
  let tail = 0
  while (
    tail < removed.length - head && tail < added.length - head &&
    removed[removed.length - 1 - tail] === added[added.length - 1 - tail]
  ) tail++
  return { head, tail }
}

/**
 * The diff an Edit call would make to `content` (the file as it is now). When the edit cannot apply
 * (the text is not there), the reason is a Note and the requested replacement is shown bare.
 */
export const editDiff = (call: ToolCall, content: string | undefined): ReadonlyArray<DiffLine> => {
  const a = args(call)
  const oldString = str(a["old_string"]) ?? ""
  const newString = str(a["new_string"]) ?? ""
  const bare = (note: string): ReadonlyArray<DiffLine> => [
    { _tag: "Note", text: note },
    ...oldString.split("\n").map((text, i): DiffLine => ({ _tag: "Removed", line: i + 1, text })),
    ...newString.split("\n").map((text, i): DiffLine => ({ _tag: "Added", line: i + 1, text }))
  ]
  if (content === undefined) return bare("(the file cannot be read; the requested replacement:)")
  const applied = applyEdit(content, { old_string: oldString, new_string: newString, replace_all: a["replace_all"] === true }, callPath(call) ?? "the file")
  if (Either.isLeft(applied)) return bare(`(this edit will fail: ${applied.left})`)
  // Whole lines around the first occurrence, before and after the replacement.
  const at = content.indexOf(oldString)
  const end = at + oldString.length
  const lineStart = content.lastIndexOf("\n", at - 1) + 1
  const nextBreak = content.indexOf("\n", end)
  const lineEnd = oldString.endsWith("\n") ? end - 1 : nextBreak === -1 ? content.length : nextBreak
  const removed = content.slice(lineStart, lineEnd).split("\n")
  const addedText = content.slice(lineStart, at) + newString + content.slice(end, Math.max(end, lineEnd))
  const added = (oldString.endsWith("\n") ? addedText.replace(/\n$/, "") : addedText).split("\n")
  const startLine = content.slice(0, lineStart).split("\n").length
  const { head, tail } = trimCommon(removed, added)
  const before = content.split("\n")
  const lastLine = before.length - (content.endsWith("\n") ? 1 : 0)
  const first = startLine + head
  const lines: Array<DiffLine> = []
  for (let n = Math.max(1, first - CONTEXT); n < first; n++) lines.push({ _tag: "Context", line: n, text: before[n - 1]! })
  removed.slice(head, removed.length - tail).forEach((text, i) => lines.push({ _tag: "Removed", line: first + i, text }))
  added.slice(head, added.length - tail).forEach((text, i) => lines.push({ _tag: "Added", line: first + i, text }))
  const resume = startLine + removed.length - tail
  const shift = added.length - removed.length
  for (let n = resume; n < resume + CONTEXT && n <= lastLine; n++) lines.push({ _tag: "Context", line: n + shift, text: before[n - 1]! })
  if (applied.right.replacements > 1) lines.push({ _tag: "Note", text: `(and ${applied.right.replacements - 1} more replacements)` })
  return lines
}

/** A Write call: the new content as added lines (the first `max`). */
export const writePreview = (call: ToolCall, max = 12): ReadonlyArray<DiffLine> => {
  const content = str(args(call)["content"]) ?? ""
  const lines = content.replace(/\n$/, "").split("\n")
  return [
    ...lines.slice(0, max).map((text, i): DiffLine => ({ _tag: "Added", line: i + 1, text })),
    ...(lines.length > max ? [{ _tag: "Note", text: `(… ${lines.length - max} more lines)` } as const] : [])
  ]
}

/** Extra lines worth showing before a person approves a call. */
export const callDetails = (call: ToolCall, content: string | undefined): ReadonlyArray<DiffLine> => {
  switch (call.name) {
    case "Edit":
      return editDiff(call, content)
    case "Write":
      return writePreview(call)
    case "Bash": {
      const a = args(call)
      const command = str(a["command"]) ?? ""
      const description = str(a["description"])
      return [
        ...(command.includes("\n") ? command.split("\n").map((text): DiffLine => ({ _tag: "Note", text })) : []),
        ...(description !== undefined ? [{ _tag: "Note", text: description } as const] : [])
      ]
    }
    default:
      return []
  }
}
