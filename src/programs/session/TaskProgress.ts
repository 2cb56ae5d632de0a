import type { Chunk, ErrorInfo } from "../../domain/Events.js"
import type { RunId } from "../../domain/Ids.js"
import type { InputMessage, ToolReturn } from "../../domain/Messages.js"
import { spendsReconnect } from "../../domain/Recovery.js"

/**
 * Where a task stands, as far as an interrupt (carry-over A or B) and a resumed stream need to
 * know: a pure fold over the chunks the task has read.
 */
export interface TaskProgress {
  readonly runId: RunId | undefined
  /** The last seq read: a broken stream resumes after it. */
  readonly lastSeq: number
  /** The current request's model output ended (request_end ok or a stop_reason): carry-over A, else B. */
  readonly modelComplete: boolean
  /** Text the current request has streamed so far. */
  readonly partialText: string
  /** Tool results being sent as the next run's input, until that run's first chunk proves they were recorded. */
  readonly unsent: ReadonlyArray<ToolReturn>
  /** The current request is a compaction's: a tool call it streams is a stray, never run. */
  readonly compacting: boolean
  /** What the last stop_reason said went wrong, if anything (the task's span reports it). */
  readonly lastError: ErrorInfo | undefined
  /** The model requests the task's runs reconnected so far (a compaction's own are not the turn's). */
  readonly reconnectsSpent: number
}

export const initial: TaskProgress = {
  runId: undefined,
  lastSeq: 0,
  modelComplete: true,
  partialText: "",
  unsent: [],
  compacting: false,
  lastError: undefined,
  reconnectsSpent: 0
}

/** A run is about to send `input`: its tool results are unsent until the run's first chunk. */
export const sending = (progress: TaskProgress, input: ReadonlyArray<InputMessage>): TaskProgress => ({
  ...progress,
  modelComplete: false,
  partialText: "",
  unsent: input.filter((m): m is ToolReturn => m.type === "tool_return")
})

export const step = (progress: TaskProgress, chunk: Chunk): TaskProgress => ({
  runId: chunk.run_id,
  lastSeq: chunk.seq,
  unsent: [],
  compacting: chunk.type === "request_begin" ? chunk.purpose === "compaction" : progress.compacting,
  partialText: chunk.type === "request_begin"
    ? ""
    : chunk.type === "text_delta"
    ? progress.partialText + chunk.content
    : progress.partialText,
  modelComplete: chunk.type === "request_begin"
    ? false
    : (chunk.type === "request_end" && chunk.status === "ok") || chunk.type === "stop_reason"
    ? true
    : progress.modelComplete,
  lastError: chunk.type === "stop_reason" ? chunk.error : progress.lastError,
  reconnectsSpent: progress.reconnectsSpent +
    (chunk.type === "request_end" && chunk.status === "retrying" && !progress.compacting && spendsReconnect(chunk.error?.tag ?? "") ? 1 : 0)
})
