import { Effect, Either } from "effect"
import type { ApprovalDecision } from "../../domain/Events.js"
import type { NewItem } from "../../domain/History.js"
import type { ConversationId, RunId, ToolCallId } from "../../domain/Ids.js"
import type { ToolCall, ToolReturn } from "../../domain/Messages.js"
import { awaitingResults, heldResults, planResult } from "../../domain/ToolResults.js"
import type { Store } from "../../services/Store.js"

/**
 * The backend's side of "tool results are committed as they finish" (the rules are the pure
 * domain/ToolResults): what is pending, what is held, and committing one submitted result.
 */

/** The open turn of a conversation: its pending calls and the results already held for them. */
export const openTurn = Effect.fn("Results.openTurn")(function*(store: Store["Type"], id: ConversationId) {
  const pending = yield* store.pendingApprovals(id)
  const returns = pending.length === 0 ? [] : yield* store.toolReturns(id, pending.map((c) => c.tool_call_id))
  return { pending, returns, held: heldResults(pending, returns) }
})

/** `Backend.pendingApprovals`: the pending calls without a committed result. */
export const awaiting = Effect.fn("Results.awaiting")(function*(store: Store["Type"], id: ConversationId) {
  const turn = yield* openTurn(store, id)
  return awaitingResults(turn.pending, turn.returns)
})

/**
 * Commits one result the moment its tool finished: into the context after a pending call, held in
 * the trace for a call the active run (`streamed`) has only streamed so far, nothing at all when it
 * is there already. Two writers answering one call: the store lets the first through, and the second
 * is a duplicate (same otid) or ToolCallAnswered.
 */
export const submitResult = Effect.fn("Results.submit")(function*(
  store: Store["Type"],
  id: ConversationId,
  result: ToolReturn,
  options: {
    readonly decision?: ApprovalDecision | undefined
    /** The active run of this conversation in this process, if it has streamed the call. */
    readonly streamedBy: RunId | undefined
  }
) {
  yield* store.getConversation(id)
  const pending: ReadonlyArray<ToolCall> = yield* store.pendingApprovals(id)
  const callId: ToolCallId = result.tool_call_id
  const facts = { pending, returns: yield* store.toolReturns(id, [callId]), streamedBy: options.streamedBy }
  const plan = yield* Either.match(planResult(id, result, facts), { onLeft: Effect.fail, onRight: Effect.succeed })
  if (plan._tag === "Duplicate") return
  const decision: ReadonlyArray<NewItem> = options.decision !== undefined ? [{ item: options.decision }] : []
  if (plan._tag === "Hold") {
    yield* store.commit({ conversationId: id, items: [...decision, { item: { ...result, run_id: plan.runId }, traceOnly: true }] }).pipe(
      Effect.catchTag("ChunkSeqError", Effect.die)
    )
    return
  }
  yield* store.commit({
    conversationId: id,
    items: [...decision, { item: { ...result, ...(plan.call.run_id !== undefined ? { run_id: plan.call.run_id } : {}) } }],
    expectOpen: [callId]
  }).pipe(
    Effect.catchTag("ChunkSeqError", Effect.die),
    // Another writer answered it between the check and the commit: the same result is no error.
    Effect.catchTag("ToolCallAnswered", (answered) =>
      Effect.flatMap(store.toolReturns(id, [callId]), (returns) =>
        returns.some((s) => s.item.type === "tool_return" && s.item.otid === result.otid) ? Effect.void : Effect.fail(answered)))
  )
})
