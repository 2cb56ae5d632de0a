import type { Chunk, ErrorInfo } from "../../domain/Events.js"
import type { ToolCall } from "../../domain/Messages.js"
import { type Assembly, type CompleteMessage, emptyAssembly } from "../../domain/RunAssembler.js"

/** What the run has committed, written only by its emitter (with each commit), read by every path that ends the run. */
export interface RunRecord {
  /** The current request's assembly as of its last committed provider chunk. */
  readonly assembly: Assembly
  /** request_begins committed; the current request is attempt `requests - 1`. */
  readonly requests: number
  /** The current request's request_begin is committed and its request_end is not. */
  readonly inRequest: boolean
  /** Messages of the current request as committed chunks, in order. */
  readonly shown: ReadonlyArray<Chunk>
  /** Complete tool calls of failed attempts: they stand, and join the final turn's calls. */
  readonly carried: ReadonlyArray<Chunk>
  /** The next request ends with the empty-response reminder. */
  readonly reminder: boolean
  readonly finished: boolean
  /** What the run's stop_reason said went wrong, if anything: its span's status. */
  readonly error?: ErrorInfo
}

export const initial: RunRecord = { assembly: emptyAssembly, requests: 0, inRequest: false, shown: [], carried: [], reminder: false, finished: false }

export const messageTypes: ReadonlySet<string> = new Set(["reasoning_message", "assistant_message", "tool_call"])

export const isToolCall = (chunk: Chunk): chunk is Chunk & ToolCall => chunk.type === "tool_call"

/**
 * The record of a run that another process was running, rebuilt from its committed chunks, so its new
 * owner (a cluster takeover) goes on where the old one stopped: the same attempt numbers, the calls
 * failed attempts carried, and what the open request had shown — its complete messages, and the text
 * still streaming as deltas — for the `[turn_retried]` that reconnects it.
 */
export const recordOf = (chunks: Iterable<Chunk>): RunRecord => {
  let r = initial
  let open = ""
  for (const chunk of chunks) {
    if (chunk.type === "request_begin") {
      r = { ...r, requests: r.requests + 1, inRequest: true, shown: [] }
      open = ""
    } else if (chunk.type === "request_end") {
      const carried = chunk.status === "retrying" ? [...r.carried, ...r.shown.filter(isToolCall)] : r.carried
      r = { ...r, inRequest: false, carried }
    } else if (chunk.type === "text_delta") {
      open += chunk.content
    } else if (messageTypes.has(chunk.type)) {
      r = { ...r, shown: [...r.shown, chunk] }
      if (chunk.type === "assistant_message") open = ""
    } else if (chunk.type === "stop_reason") {
      r = { ...r, finished: true }
    }
  }
  const messages = r.shown as ReadonlyArray<Chunk & CompleteMessage>
  return { ...r, assembly: { ...emptyAssembly, messages, text: open.length > 0 ? open : undefined } }
}
