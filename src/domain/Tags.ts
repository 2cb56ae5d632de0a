import type { ToolCall } from "./Messages.js"

/**
 * The bracket tags Baton writes into model-facing text (`[tag]…[/tag]`). Older traces and prompts
 * used `<tag>…</tag>`; those are still read.
 */
export const wrap = (tag: string, body: string): string => `[${tag}]\n${body}\n[/${tag}]`

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** The body of the last `[tag]…[/tag]` (or `<tag>…</tag>`) in `text`, trimmed. */
export const extract = (tag: string, text: string): string | undefined => {
  const t = escape(tag)
  const patterns = [new RegExp(`\\[${t}\\]([\\s\\S]*?)\\[\\/${t}\\]`, "g"), new RegExp(`<${t}>([\\s\\S]*?)<\\/${t}>`, "g")]
  for (const pattern of patterns) {
    const matches = [...text.matchAll(pattern)]
    const last = matches[matches.length - 1]
    if (last !== undefined) return last[1]!.trim()
  }
  return undefined
}

export const steeringText = (text: string): string => wrap("user_steering", text)

/** A held steering message's otid starts so: a send's input is looked up in the queue only for these. */
export const STEERING_OTID_PREFIX = "steer-"

export const isSteeringOtid = (otid: string): boolean => otid.startsWith(STEERING_OTID_PREFIX)

const describeCalls = (calls: ReadonlyArray<ToolCall>): string =>
  calls.map((c) => `- ${c.name} ${c.arguments} (id ${c.tool_call_id})`).join("\n")

/** The block a reconnect adds to the resent input, so the model continues instead of repeating itself. */
export const turnRetriedText = (partialText: string, calls: ReadonlyArray<ToolCall>): string => {
  const parts = ["Your previous response was cut off by a connection problem."]
  if (partialText.length > 0) parts.push(`It had produced this text so far:\n${partialText}`)
  if (calls.length > 0) {
    parts.push(
      `It had already issued these tool calls; they are being executed and their results will follow, so do not issue them again:\n${describeCalls(calls)}`
    )
  }
  parts.push("Continue from where the output stopped.")
  return wrap("turn_retried", parts.join("\n\n"))
}

export interface AbortedCall {
  readonly call: ToolCall
  /** The tool's output if it finished before the interrupt. */
  readonly output: string | undefined
}

/**
 * The partial turn of an interrupted, incomplete model response, flattened into one user text
 * (also used when a failed request leaves tool calls that ran but can no longer be answered).
 */
export const turnAbortedText = (
  partialText: string,
  calls: ReadonlyArray<AbortedCall>,
  header = "The user interrupted your previous response before it was complete."
): string => {
  const parts = [header]
  if (partialText.length > 0) parts.push(`Your partial response was:\n${partialText}`)
  for (const { call, output } of calls) {
    parts.push(
      output === undefined
        ? `You had called ${call.name} ${call.arguments}; it was aborted before it finished.`
        : `You had called ${call.name} ${call.arguments}; it returned:\n${output}`
    )
  }
  return wrap("turn_aborted", parts.join("\n\n"))
}

export const STALE_APPROVAL_REASON =
  "The agent harness automatically closed this stale pending tool call to recover from a client/server state desync: " +
  "the server was still waiting on a result for it, but the harness had no matching tool execution in flight and no result " +
  "was ever recorded. It was not denied by the user or a permissions policy. Re-issue the tool call if you still need it."
