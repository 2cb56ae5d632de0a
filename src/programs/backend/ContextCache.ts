import { Effect } from "effect"
import type { NotFound, StoreError } from "../../domain/Errors.js"
import type { StoredItem } from "../../domain/History.js"
import type { ConversationId } from "../../domain/Ids.js"
import { Store } from "../../services/Store.js"

/** Every item of a conversation's current segment, in order (what compaction planning reads). */
export interface SegmentView {
  readonly segment: number
  readonly items: ReadonlyArray<StoredItem>
}

interface Entry {
  segment: number
  /** The highest position taken in, of any segment: items are contiguous from 1 and never change. */
  last: number
  items: Array<StoredItem>
}

/** Conversations kept at most; the least recently used goes first. */
export const MAX_CONVERSATIONS = 256
/** Items kept at most over all conversations (a long one alone may exceed it: it is kept until the next one comes). */
export const MAX_ITEMS = 200_000

/** New items read per look; a conversation that grew by more is read in several. */
const PAGE = 1_000

/**
 * The current segment of the conversations this process runs, kept in memory and brought up to date
 * from the Store at each use by one read of what came after the last position it holds. Every send
 * used to read and decode the whole segment twice (the compaction trigger, then the model context):
 * now it reads what is new since the last send, usually the few items that send added. The Store
 * stays the truth: items are append-only with contiguous positions, so "nothing after position N"
 * is a complete check, whoever wrote (another runner of a cluster, a compaction starting a new
 * segment). A fork is a conversation of its own. `drop` forgets one (an actor that passivates).
 */
export class ContextCache extends Effect.Service<ContextCache>()("baton/ContextCache", {
  effect: Effect.gen(function*() {
    const store = yield* Store
    // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
    const entries = new Map<ConversationId, Entry>()
    let held = 0

    const evict = (keep: ConversationId) => {
      for (const [id, entry] of entries) {
        if (entries.size <= MAX_CONVERSATIONS && held <= MAX_ITEMS) return
        if (id === keep) continue
        entries.delete(id)
        held -= entry.items.length
      }
    }

    /** Takes in items read after `entry.last`, in position order; false when they do not continue it. */
    const append = (entry: Entry, page: ReadonlyArray<StoredItem>): boolean => {
      for (const stored of page) {
        // A concurrent look may have taken it in already.
        if (stored.position <= entry.last) continue
        if (stored.position !== entry.last + 1) return false
        if (stored.segment !== entry.segment) {
          held -= entry.items.length
          entry.segment = stored.segment
          entry.items = []
        }
        entry.items.push(stored)
        held++
        entry.last = stored.position
      }
      return true
    }

    const load = (id: ConversationId) =>
      Effect.gen(function*() {
        const current = yield* store.currentSegmentItems(id)
        const items = [...current.items]
        const entry: Entry = { segment: current.segment, last: items.at(-1)?.position ?? 0, items }
        held += items.length
        return entry
      })

    /** Reads what came after the entry's last position until a short page: then the entry is the Store's. */
    const catchUp = (id: ConversationId, entry: Entry): Effect.Effect<boolean, NotFound | StoreError> =>
      Effect.flatMap(store.listItems(id, { after: entry.last, limit: PAGE }), (page) => {
        if (!append(entry, page)) return Effect.succeed(false)
        return page.length < PAGE ? Effect.succeed(true) : catchUp(id, entry)
      })

    const segment = (id: ConversationId, again = false): Effect.Effect<SegmentView, NotFound | StoreError> =>
      Effect.gen(function*() {
        let entry = entries.get(id)
        let fresh = false
        if (entry === undefined) {
          const loaded = yield* load(id)
          // A concurrent look may have loaded it meanwhile: keep one.
          entry = entries.get(id)
          if (entry === undefined) {
            entry = loaded
            fresh = true
          } else held -= loaded.items.length
        }
        entries.delete(id)
        entries.set(id, entry)
        evict(id)
        // Read just now, it is the Store's already: nothing to catch up on.
        if (fresh || (yield* catchUp(id, entry))) return { segment: entry.segment, items: entry.items.slice() }
        // A gap: not what this cache expects of the Store. Read the segment afresh, once.
        forget(id)
        if (!again) return yield* segment(id, true)
        return yield* store.currentSegmentItems(id)
      }).pipe(Effect.tapErrorTag("NotFound", () => Effect.sync(() => forget(id))))

    const forget = (id: ConversationId) => {
      const entry = entries.get(id)
      if (entry === undefined) return
      entries.delete(id)
      held -= entry.items.length
    }

    return {
      segment: (id: ConversationId) => segment(id),
      /** What the model sees next: the current segment's in-context items, in order (Store.modelContext). */
      context: (id: ConversationId): Effect.Effect<ReadonlyArray<StoredItem>, NotFound | StoreError> =>
        Effect.map(segment(id), (view) => view.items.filter((s) => s.inContext)),
      drop: (id: ConversationId): Effect.Effect<void> => Effect.sync(() => forget(id))
    } as const
  })
}) {}
