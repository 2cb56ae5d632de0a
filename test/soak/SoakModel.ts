import { DEFAULT_COMPACTION_PROMPT } from "../../src/domain/Settings.js"
import { type RecordedRequest, Reply } from "../support/MockModelServer.js"

/**
 * The soak's model: a mock that reads its context (Chat Completions messages) and acts like an agent
 * doing one 3-tool task — a Write, a Bash that appends to a log, an Edit — then answers "all done".
 * It asks for the tools whose results it has not seen (with fresh call ids), summarizes when asked to
 * compact (keeping which tools are done), and streams slowly enough that a kill can land mid-stream.
 */

export type ToolKind = "w" | "b" | "e"
export const KINDS: ReadonlyArray<ToolKind> = ["w", "b", "e"]
export const FINAL_ANSWER = "all done"

interface ChatMessage {
  readonly role: string
  readonly content?: string | null
  readonly tool_call_id?: string
  readonly tool_calls?: ReadonlyArray<{ readonly id: string }>
}

export const messagesOf = (request: RecordedRequest): ReadonlyArray<ChatMessage> => {
  const json = request.json as { readonly messages?: ReadonlyArray<ChatMessage> } | undefined
  return json?.messages ?? []
}

export const kindOf = (callId: string): ToolKind | undefined => {
  const k = callId.split("-")[0]
  return k === "w" || k === "b" || k === "e" ? k : undefined
}

/** The calls a request's context shows answered, and those a summary says were. */
const doneKinds = (messages: ReadonlyArray<ChatMessage>): ReadonlySet<ToolKind> => {
  const done = new Set<ToolKind>()
  for (const m of messages) {
    if (m.role === "tool" && m.tool_call_id !== undefined) {
      const k = kindOf(m.tool_call_id)
      if (k !== undefined) done.add(k)
    }
    const summary = typeof m.content === "string" ? /done:([a-z,]*)\[\/context_summary\]/.exec(m.content) : null
    if (summary !== null) for (const k of summary[1]!.split(",")) if (k === "w" || k === "b" || k === "e") done.add(k)
  }
  return done
}

/** Arguments of each tool for call `id`: every side effect names its call, so executions can be counted per call. */
export const toolArgs = (kind: ToolKind, id: string, bashMs: number) => {
  switch (kind) {
    case "w":
      return { name: "Write", args: { file_path: `${id}.txt`, content: `written by ${id}\n` } }
    case "b":
      return { name: "Bash", args: { command: `sleep ${bashMs / 1000}; echo "${id} $$" >> bash.log; echo "pid $$"` } }
    case "e":
      return { name: "Edit", args: { file_path: `${id}.txt`, old_string: "", new_string: `edited by ${id}\n` } }
  }
}

export interface SoakModelOptions {
  /** Pause between SSE events (a slow stream). */
  readonly eventDelayMs: number
  /** How long the Bash call sleeps before it appends. */
  readonly bashMs: number
  /** Usage reported by the tool-calling turn: above the compaction threshold, so the next run compacts first. */
  readonly bigUsage: number
}

let counter = 0

export const soakResponder = (options: SoakModelOptions) => (request: RecordedRequest): Reply => {
  const messages = messagesOf(request)
  const slow = { eventDelayMs: options.eventDelayMs }
  const last = messages.at(-1)
  if (last?.role === "user" && typeof last.content === "string" && last.content.startsWith(DEFAULT_COMPACTION_PROMPT.slice(0, 40))) {
    const done = [...doneKinds(messages)].sort().join(",")
    return Reply.text(["[summary]", "The task ", "is under way. ", `done:${done}`, "[/summary]"], {}, slow)
  }
  const done = doneKinds(messages)
  const missing = KINDS.filter((k) => !done.has(k))
  if (missing.length === 0) return Reply.text(["all ", "done"], {}, slow)
  const n = ++counter
  const calls = missing.map((kind) => {
    const id = `${kind}-${process.pid}-${n}`
    const { args, name } = toolArgs(kind, id, options.bashMs)
    return { id, name, args }
  })
  return Reply.toolCalls(calls, {
    text: ["I will ", "write, ", "run and ", "edit ", "now."],
    usage: { input: options.bigUsage, output: 10 }
  }, slow)
}
