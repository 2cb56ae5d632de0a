import { Effect } from "effect"
import type { Conversation } from "../../domain/Conversation.js"
import { InvalidInput } from "../../domain/Errors.js"
import type { TaskEvent } from "../../domain/Events.js"
import type { StoredItem } from "../../domain/History.js"
import type { ConversationId } from "../../domain/Ids.js"
import { Store } from "../../services/Store.js"

/**
 * A fork: a new conversation whose model context is the source's up to one item, so a user can try
 * another way from there while the source stays as it was. Only the model context is copied (as
 * context-only items: the fork's trace starts empty, its own), and only at a cut where every tool
 * call in the copy has its result, since a model request never holds an unanswered call.
 */

/** The item as the fork records it: its run, seq and origin belonged to the source. */
const detached = (item: TaskEvent): TaskEvent => {
  const { origin: _origin, run_id: _run, seq: _seq, ...rest } = item
  return rest
}

/** The first call in `items` left without its result there, if any. */
const unpaired = (items: ReadonlyArray<StoredItem>): StoredItem | undefined => {
  const answered = new Set(items.flatMap((s) => (s.item.type === "tool_return" ? [s.item.tool_call_id] : [])))
  return items.find((s) => s.item.type === "tool_call" && !answered.has(s.item.tool_call_id))
}

/** The in-context items the model would have seen right after the item at `at` was recorded. */
const contextUpTo = Effect.fn("Fork.contextUpTo")(function*(id: ConversationId, at: number | undefined) {
  const store = yield* Store
  const [last] = yield* store.listItems(id, { limit: 1 })
  if (last === undefined) return yield* new InvalidInput({ message: `conversation ${id} has no history to fork` })
  const cut = at ?? last.position
  if (!Number.isInteger(cut) || cut < 1 || cut > last.position) {
    return yield* new InvalidInput({ message: `no item at position ${cut}: conversation ${id} has positions 1 to ${last.position}` })
  }
  const [target] = yield* store.listItems(id, { after: cut - 1, limit: 1 })
  const segment = target?.segment ?? last.segment
  const items = (yield* store.segmentItems(id, segment)).filter((s) => s.inContext && s.position <= cut)
  return { cut, items }
})

export const forkConversation = Effect.fn("Fork.fork")(function*(id: ConversationId, options?: { readonly at?: number }) {
  const store = yield* Store
  const source = yield* store.getConversation(id)
  const { cut, items } = yield* contextUpTo(id, options?.at)
  const open = unpaired(items)
  if (open !== undefined && open.item.type === "tool_call") {
    return yield* new InvalidInput({
      message: `cannot fork ${id} at position ${cut}: tool call ${open.item.tool_call_id} (${open.item.name}, position ${open.position}) ` +
        `has no result by then; fork before position ${open.position}, or after its result`
    })
  }
  const fork: Conversation = yield* store.createConversation(source.settings, {
    ...(source.title !== undefined ? { title: `${source.title} (fork)` } : {}),
    forked_from: { conversation_id: id, at: cut }
  })
  if (items.length > 0) {
    // Chunks are never written here, so a chunk-sequence failure cannot happen: it would be a bug.
    yield* store.commit({ conversationId: fork.id, items: items.map((s) => ({ item: detached(s.item), contextOnly: true })) }).pipe(
      Effect.catchTag("ChunkSeqError", Effect.die)
    )
  }
  return fork
})
