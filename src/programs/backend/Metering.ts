import { Chunk, Clock, Effect, Stream } from "effect"
import type { ConversationId, RunId } from "../../domain/Ids.js"
import type { UsagePurpose, UsageRecord } from "../../domain/Usage.js"
import type { Provider } from "../../services/Provider.js"
import type { Store } from "../../services/Store.js"

/**
 * Usage accounting at the source: every model request the backend makes goes through a metered
 * provider, so each usage the model reports is recorded as it arrives — a turn's, a compaction's, a
 * title's, and a failed attempt's that reported one. A record that cannot be written is logged, and
 * never fails the request. A run's requests `hold` theirs for the run's next recording commit (the
 * request_end's), which writes them in its own transaction.
 */
export const metered = (
  provider: Provider["Type"],
  store: Store["Type"],
  context: { readonly conversationId: ConversationId; readonly runId?: RunId; readonly purpose: UsagePurpose },
  hold?: (record: UsageRecord) => void
): Provider["Type"] => ({
  ...provider,
  stream: (request) =>
    provider.stream(request).pipe(Stream.mapChunksEffect((events) => {
      // Every read of the stream passes here; usage comes once a request, so the common batch costs one scan.
      if (!Chunk.some(events, (event) => event._tag === "Usage")) return Effect.succeed(events)
      return Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        for (const usage of events) {
          if (usage._tag !== "Usage") continue
          const record: UsageRecord = {
            conversation_id: context.conversationId,
            ...(context.runId !== undefined ? { run_id: context.runId } : {}),
            purpose: context.purpose,
            model: request.model ?? provider.model ?? provider.info?.model ?? "unknown",
            input_tokens: usage.inputTokens,
            output_tokens: usage.outputTokens,
            cache_read_tokens: usage.cachedInputTokens,
            cache_write_tokens: usage.cacheWriteTokens ?? 0,
            created_at: now
          }
          if (hold !== undefined) hold(record)
          else {
            yield* store.recordUsage(record).pipe(
              Effect.catchAll((error) => Effect.logWarning(`could not record the usage of a model request: ${error.message}`))
            )
          }
        }
        return events
      })
    }))
})
