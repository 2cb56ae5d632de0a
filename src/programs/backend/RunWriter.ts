import { Effect, Ref } from "effect"
import type { ChunkSeqError, NotFound, StoreError } from "../../domain/Errors.js"
import type { Chunk, StopReasonValue, TaskEvent } from "../../domain/Events.js"
import type { ConversationId, RunId } from "../../domain/Ids.js"
import type { NewItem } from "../../domain/History.js"
import type { RunStatus } from "../../domain/Run.js"
import type { Store } from "../../services/Store.js"
import type { RunFeed } from "./RunFeed.js"

/** One streamed item; `record` also keeps it in the conversation's history ("trace" = trace only). */
export interface Entry {
  readonly event: TaskEvent
  readonly record?: "item" | "trace"
}

export interface Finish {
  readonly status: Exclude<RunStatus, "running">
  readonly stopReason: StopReasonValue
  /** Runs after the commit and before the stop_reason is published (the actor frees the conversation here). */
  readonly onCommitted: Effect.Effect<void>
}

export type WriteError = StoreError | NotFound | ChunkSeqError

/**
 * Numbers a run's items (seq 1, 2, 3…), commits each batch with its history items in one
 * transaction, and only then publishes it: nobody ever sees a chunk the Store does not have.
 */
export interface RunWriter {
  readonly runId: RunId
  readonly conversationId: ConversationId
  readonly emit: (
    entries: ReadonlyArray<Entry>,
    options?: {
      /** History items committed before the entries' own (e.g. messages streamed earlier in this request). */
      readonly before?: ReadonlyArray<NewItem>
      /** History items committed after them (e.g. context-only text that is not a chunk). */
      readonly after?: ReadonlyArray<NewItem>
      readonly finish?: Finish
      /** Start a new trace segment before these items (a successful compaction). */
      readonly newSegment?: boolean
    }
  ) => Effect.Effect<ReadonlyArray<Chunk>, WriteError>
}

export const makeRunWriter = (
  store: Store["Type"],
  feed: RunFeed,
  conversationId: ConversationId,
  runId: RunId,
  lastSeq: number
): Effect.Effect<RunWriter> =>
  Effect.map(Ref.make(lastSeq), (seqRef) => ({
    runId,
    conversationId,
    emit: (entries, options) =>
      Effect.gen(function*() {
        const first = yield* Ref.get(seqRef)
        const chunks: Array<Chunk> = entries.map((entry, i) => ({ ...entry.event, run_id: runId, seq: first + i + 1 }))
        const items: Array<NewItem> = []
        entries.forEach((entry, i) => {
          if (entry.record !== undefined) items.push({ item: chunks[i]!, ...(entry.record === "trace" ? { traceOnly: true } : {}) })
        })
        yield* store.commit({
          conversationId,
          chunks,
          items: [...(options?.before ?? []), ...items, ...(options?.after ?? [])],
          ...(options?.newSegment === true ? { newSegment: true } : {}),
          ...(options?.finish !== undefined
            ? { finishRun: { runId, status: options.finish.status, stopReason: options.finish.stopReason } }
            : {})
        })
        yield* Ref.set(seqRef, first + chunks.length)
        if (options?.finish !== undefined) yield* options.finish.onCommitted
        yield* feed.publish(chunks)
        return chunks
      }).pipe(Effect.uninterruptible) // a commit and its publish are one step: an interrupt lands before or after
  }))
