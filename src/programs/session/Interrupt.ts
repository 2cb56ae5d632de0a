import { Effect, Option, Ref } from "effect"
import type { ToolCallId } from "../../domain/Ids.js"
import type { ToolReturn } from "../../domain/Messages.js"
import { turnAbortedText } from "../../domain/Tags.js"
import { interruptedResult, toToolReturn } from "../../domain/Tools.js"
import type { CarryOver } from "../../domain/CarryOver.js"
import type { TaskDeps } from "./Task.js"

/**
 * What an interrupt does, at any moment of a task: stop every tool (a shell's process group is
 * killed), close every call shown on the stream with exactly one result, emit `abort`, and hand the
 * backend the carry-over — A (the model's turn was complete: real results plus `[interrupted…]`
 * placeholders) or B (it was not: the partial turn flattened into `[turn_aborted]` text).
 */
export const interruptTask = Effect.fn("Interrupt.task")(function*(deps: TaskDeps, record: (carryOver: CarryOver) => Effect.Effect<unknown>) {
  const progress = yield* Ref.get(deps.progress)
  const batch = Option.getOrUndefined(yield* Ref.get(deps.batch))
  if (batch !== undefined) yield* batch.abort
  const calls = batch !== undefined ? yield* batch.calls : []
  const finished: ReadonlyMap<ToolCallId, ToolReturn> = batch !== undefined ? yield* batch.finished : new Map()
  const decisions = batch !== undefined ? yield* batch.uncommittedDecisions : []
  const placeholders = yield* Effect.forEach(calls.filter((c) => !finished.has(c.tool_call_id)), (call) =>
    Effect.map(deps.otid, (otid) => toToolReturn(interruptedResult(call.tool_call_id), otid)))
  yield* deps.emit([...placeholders, { type: "abort", reason: "interrupted by the user" }])
  const nothingSaid = progress.partialText.length === 0 && calls.length === 0
  const carryOver: CarryOver = progress.modelComplete || nothingSaid
    ? {
      results: [
        ...progress.unsent,
        ...calls.map((call) => finished.get(call.tool_call_id) ?? placeholders.find((p) => p.tool_call_id === call.tool_call_id)!)
      ],
      events: decisions,
      abort: true
    }
    : {
      results: progress.unsent,
      turnAborted: turnAbortedText(
        progress.partialText,
        calls.map((call) => ({ call, output: finished.get(call.tool_call_id)?.content }))
      ),
      events: decisions,
      abort: true
    }
  yield* record(carryOver)
})
