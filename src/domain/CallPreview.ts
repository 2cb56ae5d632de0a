import * as Either from "effect/Either"
import type { ToolCall } from "./Messages.js"
import { applyEdit } from "./TextEdit.js"

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
    case "Task": {
      const type = str(a["subagent_type"])
      return { tool: "Task", subject: `«${str(a["description"]) ?? "?"}»${type !== undefined ? ` (${type})` : ""}` }
    }
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

type Op = { readonly _tag: "Same" | "Removed" | "Added"; readonly text: string }

/** A line diff of two short regions (longest common subsequence); long regions are shown whole. */
const lineDiff = (before: ReadonlyArray<string>, after: ReadonlyArray<string>): ReadonlyArray<Op> => {
  if (before.length * after.length > 40_000) {
    return [...before.map((text): Op => ({ _tag: "Removed", text })), ...after.map((text): Op => ({ _tag: "Added", text }))]
  }
  const lcs: Array<Array<number>> = Array.from({ length: before.length + 1 }, () => new Array<number>(after.length + 1).fill(0))
  for (let i = before.length - 1; i >= 0; i--) {
    for (let j = after.length - 1; j >= 0; j--) {
      lcs[i]![j] = before[i] === after[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!)
    }
  }
  const ops: Array<Op> = []
  let i = 0
  let j = 0
  while (i < before.length || j < after.length) {
    if (i < before.length && j < after.length && before[i] === after[j]) {
      ops.push({ _tag: "Same", text: before[i++]! })
      j++
    } else if (i < before.length && (j === after.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
      ops.push({ _tag: "Removed", text: before[i++]! })
    } else {
      ops.push({ _tag: "Added", text: after[j++]! })
    }
  }
  return ops
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
  const wholeLines = oldString.endsWith("\n")
  const lineEnd = wholeLines ? end - 1 : nextBreak === -1 ? content.length : nextBreak
  const removed = content.slice(lineStart, lineEnd).split("\n")
  const addedText = content.slice(lineStart, at) + newString + content.slice(end, Math.max(end, lineEnd))
  const added = wholeLines ? (addedText === "" ? [] : addedText.replace(/\n$/, "").split("\n")) : addedText.split("\n")
  const startLine = content.slice(0, lineStart).split("\n").length
  const before = content.split("\n")
  const lastLine = before.length - (content.endsWith("\n") ? 1 : 0)
  const ops = lineDiff(removed, added)
  // Only the changed part with a little context: leading and trailing shared lines count as context.
  const firstChange = ops.findIndex((op) => op._tag !== "Same")
  const lastChange = ops.length - 1 - [...ops].reverse().findIndex((op) => op._tag !== "Same")
  const lines: Array<DiffLine> = []
  let oldLine = startLine
  let newLine = startLine
  for (let n = Math.max(1, startLine + firstChange - CONTEXT); n < startLine + firstChange; n++) {
    lines.push({ _tag: "Context", line: n, text: before[n - 1]! })
  }
  ops.forEach((op, k) => {
    if (k >= firstChange && k <= lastChange) {
      if (op._tag === "Same") lines.push({ _tag: "Context", line: newLine, text: op.text })
      else lines.push({ _tag: op._tag, line: op._tag === "Removed" ? oldLine : newLine, text: op.text })
    }
    if (op._tag !== "Added") oldLine++
    if (op._tag !== "Removed") newLine++
  })
  const afterChange = startLine + ops.slice(0, lastChange + 1).filter((op) => op._tag !== "Added").length
  const shift = added.length - removed.length
  for (let n = afterChange; n < afterChange + CONTEXT && n <= lastLine; n++) lines.push({ _tag: "Context", line: n + shift, text: before[n - 1]! })
  if (applied.right.replacements > 1) lines.push({ _tag: "Note", text: `(and ${applied.right.replacements - 1} more replacements)` })
  return lines
}

/**
 * An Edit that ran, from its result: Edit answers with the new text around the change in numbered
 * lines (`    12\tline`). Putting old_string back in place of new_string there gives those lines
 * as they were, enough for the same diff, line numbers and context included, that an approval shows.
 * Undefined when the result holds no such excerpt (an error, a created file, a deletion).
 */
export const editDiffAfter = (call: ToolCall, result: string): ReadonlyArray<DiffLine> | undefined => {
  const a = args(call)
  const oldString = str(a["old_string"]) ?? ""
  const newString = str(a["new_string"]) ?? ""
  const numbered = result.split("\n").flatMap((line) => {
    const match = /^\s*(\d+)\t(.*)$/.exec(line)
    return match !== null ? [{ line: Number(match[1]), text: match[2]! }] : []
  })
  if (numbered.length === 0 || oldString === "" || newString === "") return undefined
  const after = numbered.map((l) => l.text).join("\n")
  const at = after.indexOf(newString)
  if (at < 0) return undefined
  const before = after.slice(0, at) + oldString + after.slice(at + newString.length)
  const once = { ...call, arguments: JSON.stringify({ ...a, replace_all: false }) }
  const lines = editDiff(once, "\n".repeat(numbered[0]!.line - 1) + before + "\n")
  // A leading note says the excerpt did not hold the edit once (its context repeats the text).
  return lines[0]?._tag === "Note" ? undefined : lines
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
