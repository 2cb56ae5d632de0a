import type { TaskEvent } from "../../../domain/Events.js"
import { callHeader } from "../../../domain/CallPreview.js"

/**
 * What a task is doing right now, for the status line: waiting for the model, thinking, answering,
 * preparing or running tools, reconnecting, compacting. A pure fold over the task's events.
 */
export type Activity =
  | { readonly _tag: "Idle" }
  | { readonly _tag: "Waiting" }
  | { readonly _tag: "Thinking" }
  | { readonly _tag: "Answering" }
  | { readonly _tag: "Preparing"; readonly tool: string }
  | {
    readonly _tag: "Retrying"
    readonly why: "model" | "busy" | "stream_reconnect"
    readonly attempt: number
    readonly retryInMs: number
    readonly since: number
  }
  | { readonly _tag: "Compacting" }

export interface Phase {
  readonly activity: Activity
  /** Tools started and not yet returned, by call id, with their labels. */
  readonly running: ReadonlyMap<string, string>
  /** Calls seen on the stream and not yet returned (labels for when they start). */
  readonly calls: ReadonlyMap<string, string>
  readonly inputTokens: number
  readonly outputTokens: number
}

export const initialPhase: Phase = { activity: { _tag: "Idle" }, running: new Map(), calls: new Map(), inputTokens: 0, outputTokens: 0 }

const withMaps = (phase: Phase, f: (running: Map<string, string>, calls: Map<string, string>) => void): Phase => {
  const running = new Map(phase.running)
  const calls = new Map(phase.calls)
  f(running, calls)
  return { ...phase, running, calls }
}

/** `now` stamps a reconnect wait, so the status line can count down. */
export const stepPhase = (phase: Phase, event: TaskEvent, now: number): Phase => {
  // A subagent's events count its tokens; the activity stays the parent's, whose Task call shows as running.
  if (event.origin !== undefined) {
    return event.type === "token_usage" ? { ...phase, inputTokens: phase.inputTokens + event.input_tokens, outputTokens: phase.outputTokens + event.output_tokens } : phase
  }
  switch (event.type) {
    case "user_message":
      return phase.activity._tag === "Idle" ? { ...phase, activity: { _tag: "Waiting" } } : phase
    case "request_begin":
      return event.purpose === "compaction" ? { ...phase, activity: { _tag: "Compacting" } } : { ...phase, activity: { _tag: "Waiting" } }
    case "reasoning_delta":
      return phase.activity._tag === "Compacting" ? phase : { ...phase, activity: { _tag: "Thinking" } }
    case "text_delta":
      return phase.activity._tag === "Compacting" ? phase : { ...phase, activity: { _tag: "Answering" } }
    case "tool_call_delta":
      return { ...phase, activity: { _tag: "Preparing", tool: event.name } }
    case "tool_call": {
      const header = callHeader(event)
      return withMaps(phase, (_, calls) => void calls.set(event.tool_call_id, `${header.tool} ${header.subject}`))
    }
    case "approval_decision":
      return event.decision === "deny"
        ? phase
        : withMaps(phase, (running, calls) => void running.set(event.tool_call_id, calls.get(event.tool_call_id) ?? "a tool"))
    case "tool_return":
      return withMaps(phase, (running, calls) => {
        running.delete(event.tool_call_id)
        calls.delete(event.tool_call_id)
      })
    case "token_usage":
      return { ...phase, inputTokens: phase.inputTokens + event.input_tokens, outputTokens: phase.outputTokens + event.output_tokens }
    case "request_end":
      if (phase.activity._tag === "Compacting" && event.status !== "retrying") return phase
      return event.status === "retrying"
        ? { ...phase, activity: { _tag: "Retrying", why: "model", attempt: event.attempt + 1, retryInMs: event.retry_in_ms ?? 0, since: now } }
        : { ...phase, activity: { _tag: "Waiting" } }
    case "wait":
      return { ...phase, activity: { _tag: "Retrying", why: event.reason, attempt: 0, retryInMs: event.retry_in_ms, since: now } }
    case "compaction_begin":
      return { ...phase, activity: { _tag: "Compacting" } }
    case "compaction_end":
      return { ...phase, activity: { _tag: "Waiting" } }
    case "stop_reason":
      return event.reason === "requires_approval" ? phase : { ...phase, activity: { _tag: "Idle" } }
    case "abort":
      return { ...phase, activity: { _tag: "Idle" }, running: new Map(), calls: new Map() }
    default:
      return phase
  }
}

const compact = (n: number): string => (n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n))

/** The status line's words (the spinner, timer and hints are the screen's). */
export const describePhase = (phase: Phase, now: number): string => {
  const a = phase.activity
  const tools = [...phase.running.values()]
  const toolText = tools.length === 0 ? "" : `running ${tools[0]}${tools.length > 1 ? ` (+${tools.length - 1} more)` : ""}`
  switch (a._tag) {
    case "Retrying": {
      const left = `${(Math.max(0, a.retryInMs - (now - a.since)) / 1000).toFixed(1)} s`
      const what = a.why === "busy"
        ? `the conversation is busy: retrying in ${left}`
        : a.why === "stream_reconnect"
        ? `the stream broke off: following it again in ${left}`
        : `retrying in ${left} (attempt ${a.attempt})`
      return `${what} · Enter retries now · Ctrl-C abandons`
    }
    case "Thinking":
      return "thinking"
    case "Answering":
      return "answering"
    case "Preparing":
      return `preparing a ${a.tool} call`
    case "Compacting":
      return "compacting the context"
    case "Waiting":
      return toolText !== "" ? toolText : "waiting for the model"
    case "Idle":
      return toolText !== "" ? toolText : "idle"
  }
}

export const tokenText = (phase: Phase): string =>
  phase.inputTokens + phase.outputTokens === 0 ? "" : `${compact(phase.inputTokens)} in · ${compact(phase.outputTokens)} out`
