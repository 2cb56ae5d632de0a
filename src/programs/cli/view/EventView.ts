import type { TaskEvent } from "../../../domain/Events.js"
import type { Origin, ToolCall } from "../../../domain/Messages.js"
import { extract } from "../../../domain/Tags.js"
import { callHeader, type DiffLine } from "../../../domain/CallPreview.js"
import type { Style } from "./Style.js"

/**
 * Task events as a person reads them: the core of view/, the terminal views (output and input; the
 * approvers and the commands decide). EventView folds events into pieces of text (domain/CallPreview
 * reads a call, ApprovalView its approval question); TaskOutput prints them for `baton run`; LiveView shows
 * them on a Screen above a status line (Phase) for `chat` and `demo`; LineEditor reads chat's input;
 * Style colours only a terminal.
 */

/**
 * Where a piece goes. `text` is the assistant's answer (stdout for `baton run`); `note` is whole
 * lines about everything around it (tool calls, results, decisions, retries, stops), and the writer
 * starts each on a fresh line; `reasoning` is the model's thinking, streamed like text. The fold is
 * pure: the state remembers open lines and which call a result answers.
 */
export type Sink = "text" | "note" | "reasoning"

export interface Piece {
  readonly sink: Sink
  readonly text: string
}

export interface ViewOptions {
  readonly style: Style
  /** Show decisions the user made at a prompt (the prompt already showed them when false). */
  readonly userDecisions: boolean
  /** Show the model's reasoning text (dimmed); otherwise only the phase says "thinking". */
  readonly reasoning: boolean
  /** Echo the task's prompt (a demo or a replay; a person who typed it has seen it). */
  readonly prompts: boolean
  /** Show steering messages as they reach the model (chat shows them when they are typed). */
  readonly steering?: boolean
  /** How an "allow" the approver gave reads ("once" at a prompt, "(--approve allow)"). */
  readonly userLabel?: string
}

export interface ViewState {
  /** The assistant's text so far did not end with a newline. */
  readonly textOpen: boolean
  readonly inReasoning: boolean
  readonly calls: ReadonlyMap<string, ToolCall>
  /** The call whose lines were shown last: a result right under its call needs no label. */
  readonly lastCall: string | undefined
  /** Between compaction_begin and compaction_end the model writes a summary, not an answer. */
  readonly compacting: boolean
  /** Each subagent's own fold, by its Task call. */
  readonly children?: ReadonlyMap<string, ViewState>
}

export const initialView: ViewState = { textOpen: false, inReasoning: false, calls: new Map(), lastCall: undefined, compacting: false }

const RESULT_LINES = 6

/** Result text, first lines only: the model sees everything, a person needs the gist. */
export const resultExcerpt = (content: string, max = RESULT_LINES): ReadonlyArray<string> => {
  const lines = content.replace(/\n+$/, "").split("\n").map((l) => (l.length > 200 ? `${l.slice(0, 199)}…` : l))
  if (lines.length <= max + 1) return lines
  // The last line often says how it ended ("2 of 4 failed", "[exit code 1]"): keep it.
  const hidden = lines.length - max
  return [...lines.slice(0, max - 1), `… ${hidden} more line${hidden === 1 ? "" : "s"}`, lines.at(-1)!]
}

export const diffLines = (lines: ReadonlyArray<DiffLine>, style: Style, indent = "    "): ReadonlyArray<string> => {
  const width = Math.max(0, ...lines.map((l) => (l._tag === "Note" ? 0 : String(l.line).length)))
  return lines.map((l) => {
    switch (l._tag) {
      case "Note":
        return `${indent}${style.dim(l.text)}`
      case "Context":
        return `${indent}${style.dim(`${String(l.line).padStart(width)}   ${l.text}`)}`
      case "Removed":
        return `${indent}${style.red(`${String(l.line).padStart(width)} - ${l.text}`)}`
      case "Added":
        return `${indent}${style.green(`${String(l.line).padStart(width)} + ${l.text}`)}`
    }
  })
}

export const callLine = (call: ToolCall, style: Style): string => {
  const header = callHeader(call)
  return `${style.cyan("●")} ${style.bold(header.tool)} ${header.subject}`
}

/** `label` names the call when its own line is not right above. */
const decisionLine = (event: Extract<TaskEvent, { type: "approval_decision" }>, style: Style, userLabel: string, label: string): string => {
  const rule = event.rule !== undefined ? ` (${event.rule})` : ""
  if (event.decision === "deny") {
    const why = event.source === "rule"
      ? `by rule${rule}`
      : event.source === "user"
      ? "by you"
      : event.source === "default"
      ? "(no rule allows it and no one could be asked)"
      : `(${event.reason ?? event.source})`
    return `  ${style.yellow(`✗ ${label}denied ${why}`)}`
  }
  const how = event.source === "rule"
    ? `by rule${rule}`
    : event.source === "session"
    ? `by this session's grant${rule}`
    : event.decision === "allow_always"
    ? `for this session${rule}`
    : userLabel.trim()
  return `  ${style.dim(`✓ ${label}allowed${how !== "" ? ` ${how}` : ""}`)}`
}

export const waitText = (ms: number): string => (ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`)

/** A Read result is the file itself; a person needs to know how much was read, not to see it again. */
const readSummary = (content: string): string | undefined => {
  const numbered = content.split("\n").filter((l) => /^\s*\d+\t/.test(l)).length
  if (numbered === 0) return undefined
  const more = /\[showing lines (\d+)-(\d+) of (\d+)/.exec(content)
  return more !== null ? `read lines ${more[1]}–${more[2]} of ${more[3]}` : `read ${numbered} line${numbered === 1 ? "" : "s"}`
}

const resultLines = (event: Extract<TaskEvent, { type: "tool_return" }>, call: ToolCall | undefined, style: Style): ReadonlyArray<string> => {
  const summary = event.status === "success" && call?.name === "Read" ? readSummary(event.content) : undefined
  if (summary !== undefined) return [`  ⎿ ${style.dim(summary)}`]
  switch (event.status) {
    case "denied":
      return [`  ${style.yellow("⎿ denied")}${style.dim(` — ${resultExcerpt(event.content, 1)[0]}`)}`]
    case "interrupted":
      return [`  ${style.yellow("⎿ interrupted")}`]
    default: {
      const paint = event.status === "error" ? style.red : style.dim
      return resultExcerpt(event.content).map((line, i) => `  ${i === 0 ? "⎿" : " "} ${paint(line)}`)
    }
  }
}

const stopLine = (event: Extract<TaskEvent, { type: "stop_reason" }>, style: Style): string | undefined => {
  const detail = event.error !== undefined ? `: ${event.error.message}` : ""
  switch (event.reason) {
    case "max_turns":
      return style.yellow("■ stopped: the task reached its turn limit (--max-turns)")
    case "max_tokens":
      return style.yellow("■ stopped: the model reached its output token limit")
    case "error":
      return style.red(`✗ the task failed${detail}`)
    case "auth":
      return style.red(`✗ the model refused the credentials${detail} — check BATON_API_KEY (or OPENAI_API_KEY / ANTHROPIC_API_KEY)`)
    default:
      return undefined
  }
}

/** The pieces one event adds, and the state after it. */
export const viewEvent = (state: ViewState, event: TaskEvent, options: ViewOptions): [ViewState, ReadonlyArray<Piece>] => {
  if (event.origin !== undefined) return viewSubagent(state, event, event.origin, options)
  const { style } = options
  const pieces: Array<Piece> = []
  let { calls, compacting, inReasoning, lastCall, textOpen } = state
  const note = (...lines: ReadonlyArray<string | undefined>) => {
    const shown = lines.filter((l): l is string => l !== undefined)
    if (shown.length === 0) return
    if (inReasoning) pieces.push({ sink: "reasoning", text: "\n" })
    inReasoning = false
    pieces.push({ sink: "note", text: `${shown.join("\n")}\n` })
  }
  switch (event.type) {
    case "user_message": {
      const steering = extract("user_steering", event.content)
      if (steering !== undefined) {
        if (options.steering !== false) note(style.magenta(`↳ steering: ${steering}`))
      }
      else if (options.prompts) note(`${style.bold("›")} ${event.content}`)
      break
    }
    case "reasoning_delta":
      if (options.reasoning && !compacting && event.content !== "") {
        pieces.push({ sink: "reasoning", text: `${inReasoning ? "" : "✻ "}${event.content}` })
        inReasoning = true
      }
      break
    case "text_delta":
      if (!compacting && event.content !== "") {
        if (inReasoning) pieces.push({ sink: "reasoning", text: "\n" })
        inReasoning = false
        pieces.push({ sink: "text", text: event.content })
        textOpen = !event.content.endsWith("\n")
      }
      break
    case "assistant_message":
      if (textOpen) pieces.push({ sink: "text", text: "\n" })
      textOpen = false
      break
    case "tool_call":
      calls = new Map(calls).set(event.tool_call_id, event)
      note(callLine(event, style))
      lastCall = event.tool_call_id
      break
    case "approval_decision": {
      const call = calls.get(event.tool_call_id)
      const label = call !== undefined && lastCall !== event.tool_call_id ? `${callHeader(call).tool} ${callHeader(call).subject}: ` : ""
      if (event.source !== "user" || options.userDecisions) note(decisionLine(event, style, options.userLabel ?? "once", label))
      break
    }
    case "tool_return": {
      const call = calls.get(event.tool_call_id)
      // Not right under its call (parallel calls): the result names its call, rather than printing
      // the call's line a second time as if it were another call.
      const label = call !== undefined && lastCall !== event.tool_call_id ? `${callHeader(call).tool} ${callHeader(call).subject}: ` : ""
      note(...resultLines(event, call, style).map((line, i) => (i === 0 ? line.replace("⎿ ", `⎿ ${label}`) : line)))
      lastCall = event.tool_call_id
      break
    }
    case "request_end":
      if (event.status === "retrying") {
        note(style.yellow(`⟳ the model request failed${event.error !== undefined ? ` (${event.error.message})` : ""}; retrying in ${waitText(event.retry_in_ms ?? 0)}`))
      }
      break
    case "wait":
      note(style.yellow(event.reason === "busy"
        ? `⟳ the conversation is busy (another run or a compaction); retrying in ${waitText(event.retry_in_ms)}`
        : `⟳ the run's stream broke off; following it again in ${waitText(event.retry_in_ms)}`))
      break
    case "stop_reason":
      note(stopLine(event, style))
      break
    case "compaction_begin":
      compacting = true
      note(style.blue(`◆ compacting the context (${event.reason}, ${event.mode})…`))
      break
    case "compaction_end":
      compacting = false
      note(event.status === "ok"
        ? style.blue(`◆ compacted; the conversation continues in trace segment ${event.segment ?? "?"}`)
        : style.red(`✗ compaction failed${event.error !== undefined ? `: ${event.error.message}` : ""}; the old context stays`))
      break
    case "summary_message":
      note(...resultExcerpt(event.content, 6).map((l) => style.dim(`  │ ${l}`)))
      break
    case "abort":
      note(style.yellow("■ interrupted — unfinished tools were stopped; your next prompt continues from here"))
      break
    default:
      break
  }
  return [{ ...state, calls, compacting, inReasoning, lastCall, textOpen }, pieces]
}

const SUBAGENT_INDENT = "    │ "

/**
 * A subagent's event: folded with the child's own state and drawn as notes indented under its Task
 * call, never as the parent's answer (its text shows once, whole, when its message completes).
 */
const viewSubagent = (state: ViewState, event: TaskEvent, origin: Origin, options: ViewOptions): [ViewState, ReadonlyArray<Piece>] => {
  const { style } = options
  const children = state.children ?? new Map<string, ViewState>()
  const known = children.get(origin.tool_call_id)
  const pieces: Array<Piece> = []
  if (known === undefined) pieces.push({ sink: "note", text: `${style.cyan(`  ↳ subagent «${origin.description}»`)} ${style.dim(origin.conversation_id)}\n` })
  const child = known ?? initialView
  const { origin: _origin, ...own } = event
  const [next, drawn] = event.type === "text_delta" || event.type === "reasoning_delta" || event.type === "tool_call_delta"
    ? [child, []]
    : viewEvent(child, own, { ...options, reasoning: false, prompts: false, steering: false })
  const lines = [
    ...(event.type === "assistant_message" && event.content.trim() !== "" ? event.content.replace(/\n+$/, "").split("\n") : []),
    ...drawn.filter((p) => p.sink === "note").flatMap((p) => p.text.replace(/\n$/, "").split("\n"))
  ]
  const all = new Map(children).set(origin.tool_call_id, next)
  // Several children interleave their lines: then each line says whose it is.
  const indent = all.size > 1 ? `${SUBAGENT_INDENT}${style.dim(`«${origin.description}»`)} ` : SUBAGENT_INDENT
  if (lines.length > 0) pieces.push({ sink: "note", text: `${lines.map((l) => `${indent}${l}`).join("\n")}\n` })
  return [{ ...state, children: all }, pieces]
}
