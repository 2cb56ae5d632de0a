import { Either } from "effect"
import { ApprovalPending, InvalidInput, InvalidToolCallIds, ToolCallAnswered } from "./Errors.js"
import type { Chunk } from "./Events.js"
import type { NewItem, StoredItem } from "./History.js"
import type { ConversationId, RunId, ToolCallId } from "./Ids.js"
import type { InputMessage, ToolCall, ToolReturn } from "./Messages.js"

/**
 * Tool results are committed as they finish: the pure rules of where one goes and of what a run's
 * input adds to the model context. A call has exactly one committed result:
 * - a result for a pending call enters the context at once, after its call;
 * - a result for a call the active run has streamed but not yet committed (its request is still
 *   going) is *held*: recorded in the trace with the issuing run's id, and copied into the context
 *   (context-only) by the next input assembly, once the call is committed;
 * - the same result again (same otid) changes nothing; another result for an answered call is
 *   ToolCallAnswered.
 * A run's input answers the pending calls that have no committed result, so a crash at any point
 * re-asks only calls that never finished.
 */

/** What a submitted result does. */
export type ResultPlan =
  | { readonly _tag: "Commit"; readonly call: ToolCall }
  | { readonly _tag: "Hold"; readonly runId: RunId }
  | { readonly _tag: "Duplicate" }

const answered = (conversationId: ConversationId, toolCallId: ToolCallId) =>
  new ToolCallAnswered({
    conversationId,
    toolCallId,
    message: `tool call ${toolCallId} already has a committed result; a call is answered exactly once`
  })

const unknownCalls = (conversationId: ConversationId, unknown: ReadonlyArray<ToolCallId>, missing: ReadonlyArray<ToolCallId>) =>
  new InvalidToolCallIds({
    conversationId,
    unknown,
    missing,
    message: [
      unknown.length > 0 ? `results for calls that are not pending: ${unknown.join(", ")}` : "",
      missing.length > 0 ? `no result for pending calls: ${missing.join(", ")}` : ""
    ].filter((s) => s.length > 0).join("; ")
  })

const returnOf = (stored: StoredItem): ToolReturn | undefined => (stored.item.type === "tool_return" ? stored.item : undefined)

/** The held results of pending calls: trace-only returns recorded under the run that issued the call. */
export const heldResults = (pending: ReadonlyArray<ToolCall>, returns: ReadonlyArray<StoredItem>): ReadonlyMap<ToolCallId, ToolReturn> => {
  const held = new Map<ToolCallId, ToolReturn>()
  for (const call of pending) {
    if (call.run_id === undefined) continue
    const found = returns.find((stored) => {
      const r = returnOf(stored)
      return !stored.inContext && r !== undefined && r.tool_call_id === call.tool_call_id && r.run_id === call.run_id
    })
    const r = found === undefined ? undefined : returnOf(found)
    if (r !== undefined) held.set(call.tool_call_id, r)
  }
  return held
}

/** The pending calls still waiting for a result (those with a held one are answered). */
export const awaitingResults = (pending: ReadonlyArray<ToolCall>, returns: ReadonlyArray<StoredItem>): ReadonlyArray<ToolCall> => {
  const held = heldResults(pending, returns)
  return pending.filter((call) => !held.has(call.tool_call_id))
}

const sameResult = (returns: ReadonlyArray<StoredItem>, result: ToolReturn): boolean =>
  returns.some((stored) => returnOf(stored)?.otid === result.otid && returnOf(stored)?.tool_call_id === result.tool_call_id)

/**
 * Where one submitted result goes. `returns` are the stored returns with its tool_call_id; `streamedBy`
 * is the active run when it has streamed this call.
 */
export const planResult = (
  conversationId: ConversationId,
  result: ToolReturn,
  facts: {
    readonly pending: ReadonlyArray<ToolCall>
    readonly returns: ReadonlyArray<StoredItem>
    readonly streamedBy: RunId | undefined
  }
): Either.Either<ResultPlan, ToolCallAnswered | InvalidToolCallIds> => {
  const id = result.tool_call_id
  if (sameResult(facts.returns, result)) return Either.right({ _tag: "Duplicate" })
  const call = facts.pending.find((c) => c.tool_call_id === id)
  if (call !== undefined) {
    return heldResults([call], facts.returns).has(id) ? Either.left(answered(conversationId, id)) : Either.right({ _tag: "Commit", call })
  }
  if (facts.streamedBy !== undefined) {
    const runId = facts.streamedBy
    const held = facts.returns.some((stored) => !stored.inContext && returnOf(stored)?.tool_call_id === id && returnOf(stored)?.run_id === runId)
    return held ? Either.left(answered(conversationId, id)) : Either.right({ _tag: "Hold", runId })
  }
  if (facts.returns.some((stored) => stored.inContext && returnOf(stored)?.tool_call_id === id)) return Either.left(answered(conversationId, id))
  return Either.left(unknownCalls(conversationId, [id], []))
}

export type InputError = InvalidInput | ApprovalPending | InvalidToolCallIds | ToolCallAnswered

/** What a run's input commits: every pending call answered once, in call order, then the user texts. */
export interface InputPlan {
  readonly items: ReadonlyArray<NewItem>
  /** The calls these items answer: still open when they are committed, or nothing is. */
  readonly answers: ReadonlyArray<ToolCallId>
}

/**
 * Checks a run's input against the pending calls and the results already committed, and orders it
 * for the model. Each pending call is answered by its held result (copied into the context) or by a
 * result in the input; results committed already (same otid) are left out; the user texts follow.
 * User text alone (or a `rerun` with no input) while a call waits for a result is ApprovalPending.
 */
export const planInput = (
  conversationId: ConversationId,
  messages: ReadonlyArray<InputMessage>,
  pending: ReadonlyArray<ToolCall>,
  returns: ReadonlyArray<StoredItem>,
  rerun = false
): Either.Either<InputPlan, InputError> => {
  if (messages.length === 0 && !rerun) return Either.left(new InvalidInput({ message: "a run needs at least one input message" }))
  if (new Set(messages.map((m) => m.otid)).size !== messages.length) {
    return Either.left(new InvalidInput({ message: "every input message needs its own otid" }))
  }
  const results = messages.filter((m): m is ToolReturn => m.type === "tool_return")
  const texts = messages.filter((m) => m.type === "user_message")
  const held = heldResults(pending, returns)
  const pendingIds = new Set(pending.map((c) => c.tool_call_id))
  const given = new Map<ToolCallId, ToolReturn>()
  const unknown: Array<ToolCallId> = []
  for (const r of results) {
    const id = r.tool_call_id
    if (given.has(id)) {
      unknown.push(id)
      continue
    }
    if (pendingIds.has(id)) {
      const kept = held.get(id)
      if (kept !== undefined && kept.otid !== r.otid) return Either.left(answered(conversationId, id))
      given.set(id, r)
      continue
    }
    // Committed already (the client sends every result again with the next input): nothing to add.
    if (sameResult(returns, r)) continue
    if (returns.some((stored) => stored.inContext && returnOf(stored)?.tool_call_id === id)) return Either.left(answered(conversationId, id))
    unknown.push(id)
  }
  const missing = pending.filter((c) => !given.has(c.tool_call_id) && !held.has(c.tool_call_id)).map((c) => c.tool_call_id)
  if (results.length === 0 && missing.length > 0) {
    return Either.left(
      new ApprovalPending({
        conversationId,
        toolCallIds: missing,
        message: `the conversation is waiting for the results of ${missing.length} tool call(s): ${missing.join(", ")}`
      })
    )
  }
  if (unknown.length > 0 || missing.length > 0) return Either.left(unknownCalls(conversationId, unknown, missing))
  const answers: Array<NewItem> = pending.map((call) => {
    const kept = held.get(call.tool_call_id)
    // A held result is in the trace already: the context gets a copy.
    return kept !== undefined ? { item: kept, contextOnly: true } : { item: given.get(call.tool_call_id)! }
  })
  return Either.right({ items: [...answers, ...texts.map((item) => ({ item }))], answers: pending.map((c) => c.tool_call_id) })
}

/**
 * The calls a run issued, from its chunks: complete tool_calls of its model requests (a failed
 * attempt's stand too), not a compaction's stray ones.
 */
export const issuedCalls = (chunks: ReadonlyArray<Chunk>): ReadonlyArray<Chunk & ToolCall> => {
  const calls: Array<Chunk & ToolCall> = []
  let compacting = false
  for (const chunk of chunks) {
    if (chunk.type === "request_begin") compacting = chunk.purpose === "compaction"
    else if (chunk.type === "tool_call" && !compacting) calls.push(chunk)
  }
  return calls
}
