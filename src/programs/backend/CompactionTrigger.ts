import { Effect, Option } from "effect"
import { estimateContext, preflightThreshold } from "../../domain/Compaction.js"
import type { Conversation } from "../../domain/Conversation.js"
import type { CompactionReason } from "../../domain/Events.js"
import type { Store } from "../../services/Store.js"
import type { Compactability } from "../../domain/Compaction.js"

/**
 * Whether the next request should start with a compaction, and why: the last request's usage reached
 * maxContextLength (`context`), the segment holds maxSessionTurns turns (`turns`), or the estimate
 * of the next request is above the pre-flight threshold (`preflight`).
 */
export const compactionTrigger = (store: Store["Type"], conversation: Conversation) =>
  Effect.gen(function*() {
    const settings = conversation.settings.compaction
    const segment = yield* store.currentSegment(conversation.id)
    const items = yield* store.segmentItems(conversation.id, segment)
    const lastUsage = items.findLast((s) => s.item.type === "token_usage")?.item
    if (settings.maxContextLength > 0 && lastUsage?.type === "token_usage" && lastUsage.total_tokens >= settings.maxContextLength) {
      return Option.some<CompactionReason>("context")
    }
    const turns = items.filter((s) => s.item.type === "request_begin" && s.item.attempt === 0 && s.item.purpose !== "compaction").length
    if (settings.maxSessionTurns > 0 && turns >= settings.maxSessionTurns) return Option.some<CompactionReason>("turns")
    const window = settings.contextWindow ?? settings.maxContextLength
    const threshold = preflightThreshold(window)
    if (threshold !== undefined) {
      const fixed = conversation.settings.system_prompt + JSON.stringify(conversation.settings.tools)
      const estimate = estimateContext(items.map((s) => ({ item: s.item, inContext: s.inContext })), fixed)
      if (estimate.tokens > threshold) return Option.some<CompactionReason>("preflight")
    }
    return Option.none<CompactionReason>()
  })

/**
 * Can a compaction run now: `unsupported` while a run is active (compaction is a transaction of the
 * conversation and waits for it), `empty` with nothing in context, `just_compacted` when nothing
 * happened since the last one.
 */
export const compactability = (store: Store["Type"], conversation: Conversation, busy: boolean) =>
  Effect.gen(function*() {
    if (busy) return "unsupported" as Compactability
    const context = yield* store.modelContext(conversation.id)
    if (context.length === 0) return "empty" as Compactability
    const segment = yield* store.currentSegment(conversation.id)
    const items = yield* store.segmentItems(conversation.id, segment)
    const compacted = items.some((s) => s.item.type === "compaction_end" && s.item.status === "ok")
    const since = items.filter((s) => s.item.type === "request_begin" && s.item.purpose !== "compaction").length
    return (compacted && since === 0 ? "just_compacted" : "ok") as Compactability
  })
