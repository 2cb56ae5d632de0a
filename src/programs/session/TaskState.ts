import type { Scope } from "effect"
import type { RunId } from "../../domain/Ids.js"
import type { ToolReturn } from "../../domain/Messages.js"
import type { ToolBatch } from "./ToolBatch.js"

/** What an interrupt needs to know about the task at the moment it lands. */
export interface TaskState {
  readonly batch: ToolBatch | undefined
  /** Owns the batch's approver and tool fibers; closing it interrupts them. */
  readonly batchScope: Scope.CloseableScope | undefined
  readonly runId: RunId | undefined
  readonly lastSeq: number
  /** The current request's model output ended (request_end ok or a stop_reason): carry-over A, else B. */
  readonly modelComplete: boolean
  /** Text the current request has streamed so far. */
  readonly partialText: string
  /** Tool results being sent as the next run's input, until that run's first chunk proves they were recorded. */
  readonly unsent: ReadonlyArray<ToolReturn>
}

export const initialTaskState: TaskState = {
  batch: undefined,
  batchScope: undefined,
  runId: undefined,
  lastSeq: 0,
  modelComplete: true,
  partialText: "",
  unsent: []
}
