import { Chunk as EChunk, Effect, Exit, Metric, Option, PubSub, Ref, Scope, Stream } from "effect"
import type { ChunkSeqError, NotFound, StoreError, ToolCallAnswered } from "../../domain/Errors.js"
import type { Chunk, StopReasonValue, TaskEvent } from "../../domain/Events.js"
import { type NewItem, records, type Write } from "../../domain/History.js"
import type { ConversationId, Otid, RunId } from "../../domain/Ids.js"
import type { RunStatus } from "../../domain/Run.js"
import { ATTR, SPAN, spanOptions, Telemetry } from "../../domain/Telemetry.js"
import type { UsageRecord } from "../../domain/Usage.js"
import { type OpenPull, openPull, pulling, takeBatch } from "../../services/Batches.js"
import type { Store } from "../../services/Store.js"
import { chunksPersisted } from "./Metrics.js"

/**
 * The run log: commit, then publish; follow from a seq. The producer numbers a run's items (seq 1,
 * 2, 3…), commits each batch with its history items in one transaction, and only then publishes it,
 * so nobody ever sees a chunk the Store does not have. A follower subscribes first, then reads the
 * Store to its end, then takes live chunks with a higher seq: no gap (anything committed after the
 * read was published after the subscription) and no duplicate (the seq filter).
 */
export interface RunLog {
  readonly runId: RunId
  readonly conversationId: ConversationId
  readonly emit: (entries: ReadonlyArray<Entry>, options?: EmitOptions) => Effect.Effect<ReadonlyArray<Chunk>, WriteError>
  readonly follow: (after: number) => Stream.Stream<Chunk, NotFound | StoreError>
  /**
   * Holds a model request's usage for the run's next commit that records something (its
   * request_end's, at the latest its stop's): recorded in that transaction, not in one of its own.
   */
  readonly holdUsage: (record: UsageRecord) => void
  /**
   * Its job has stopped: nothing more will be published. A follower ends once it has what was
   * published, with or without the stop_reason (a job that stops before its run does — a cluster's
   * shard moved — leaves the rest of the run to whoever adopts it).
   */
  readonly close: Effect.Effect<void>
}

/** One streamed item; `record` also keeps it in the conversation's history ("trace" = trace only). */
export interface Entry {
  readonly event: TaskEvent
  readonly record?: "item" | "trace"
}

export interface EmitOptions {
  /** History items committed before the entries' own (e.g. messages streamed earlier in this request). */
  readonly before?: ReadonlyArray<NewItem>
  /** History items committed after them (e.g. context-only text that is not a chunk). */
  readonly after?: ReadonlyArray<NewItem>
  readonly finish?: Finish
  /** Start a new trace segment before these items (a successful compaction). */
  readonly newSegment?: boolean
  /** Held steering these entries record, taken off the queue in the same commit. */
  readonly takesSteering?: ReadonlyArray<Otid>
}

export interface Finish {
  readonly status: Exclude<RunStatus, "running">
  readonly stopReason: StopReasonValue
  /** Runs after the commit and before the stop_reason is published (the actor frees the conversation here). */
  readonly onCommitted: Effect.Effect<void>
}

export type WriteError = StoreError | NotFound | ChunkSeqError | ToolCallAnswered

const isStop = (chunk: Chunk): boolean => chunk.type === "stop_reason"

/**
 * An event as its run's chunk. Nearly every chunk is a delta, built here field by field: a spread
 * over events of a dozen shapes is a megamorphic copy, about ten times the cost, on every chunk.
 */
export const stamped = (event: TaskEvent, runId: RunId, seq: number): Chunk => {
  switch (event.type) {
    case "text_delta":
    case "reasoning_delta":
      return event.origin === undefined
        ? { type: event.type, content: event.content, run_id: runId, seq }
        : { ...event, run_id: runId, seq }
    default:
      return { ...event, run_id: runId, seq }
  }
}

/**
 * Live chunks kept per run for followers that lag. A follower that falls further behind finds a gap
 * and reads the Store instead, so a slow reader (a stalled SSE client) costs bounded memory and never
 * holds up the run's commits.
 */
export const LIVE_CAPACITY = 128

export const makeRunLog = Effect.fn("RunLog.make")(function*(
  store: Store["Type"],
  run: { readonly conversationId: ConversationId; readonly runId: RunId; readonly lastSeq: number }
) {
  const { conversationId, runId } = run
  // `null` after the last chunk: the log was closed.
  const pubsub = yield* PubSub.sliding<Chunk | null>(LIVE_CAPACITY)
  const seqRef = yield* Ref.make(run.lastSeq)
  // The last chunks published, oldest first, and the seq of the last one: a follower that joins a
  // moment after they went out (the sender itself, once its run has begun) takes them from here
  // instead of reading the Store.
  const recent: Array<Chunk> = []
  let published = run.lastSeq
  let stopped = false
  let closed = false
  const remember = (chunks: ReadonlyArray<Chunk>) => {
    for (const chunk of chunks) {
      recent.push(chunk)
      published = chunk.seq
      if (isStop(chunk)) stopped = true
    }
    if (recent.length > LIVE_CAPACITY) recent.splice(0, recent.length - LIVE_CAPACITY)
  }
  // Read once per run: with no exporter installed, a commit pays for no span and no sizes.
  const telemetry = yield* Telemetry
  const held: Array<UsageRecord> = []
  const traced = (write: Write, last: number) =>
    telemetry.tracing
      ? Effect.withSpan(store.commit(write), SPAN.storeCommit, spanOptions({
        [ATTR.conversationId]: conversationId,
        [ATTR.runId]: runId,
        [ATTR.seq]: last,
        [ATTR.rows]: (write.chunks?.length ?? 0) + (write.items?.length ?? 0),
        [ATTR.bytes]: Buffer.byteLength(JSON.stringify(write.chunks ?? [])) + Buffer.byteLength(JSON.stringify(write.items ?? []))
      }))
      : store.commit(write)

  const emit = Effect.fn("RunLog.emit")(
    function*(entries: ReadonlyArray<Entry>, options?: EmitOptions) {
      const first = yield* Ref.get(seqRef)
      const chunks: Array<Chunk> = entries.map((entry, i) => stamped(entry.event, runId, first + i + 1))
      const items: Array<NewItem> = []
      entries.forEach((entry, i) => {
        if (entry.record !== undefined) items.push({ item: chunks[i]!, ...(entry.record === "trace" ? { traceOnly: true } : {}) })
      })
      const write: Write = {
        conversationId,
        chunks,
        items: [...(options?.before ?? []), ...items, ...(options?.after ?? [])],
        ...(options?.newSegment === true ? { newSegment: true } : {}),
        ...(options?.takesSteering !== undefined ? { takesSteering: options.takesSteering } : {}),
        ...(options?.finish !== undefined
          ? { finishRun: { runId, status: options.finish.status, stopReason: options.finish.stopReason } }
          : {})
      }
      // Usage rides on a commit that records: a streamed one would leave the group commit's cheap path.
      const usage = held.length > 0 && records(write) ? held.splice(0) : []
      yield* traced(usage.length > 0 ? { ...write, usage } : write, first + chunks.length).pipe(
        Effect.tapError(() => Effect.sync(() => void held.unshift(...usage)))
      )
      yield* Ref.set(seqRef, first + chunks.length)
      if (telemetry.metrics) yield* Metric.incrementBy(chunksPersisted, chunks.length)
      if (options?.finish !== undefined) yield* options.finish.onCommitted
      remember(chunks)
      yield* PubSub.publishAll(pubsub, chunks)
      return chunks as ReadonlyArray<Chunk>
    },
    Effect.uninterruptible // a commit and its publish are one step: an interrupt lands before or after
  )

  /**
   * One pull per batch, in a plain loop: the live buffer's batch taken whole, filtered by seq, and
   * ended at the stop_reason, with no stream stage per step (a follower's stages cost more Effect
   * steps per batch than the commit did). A gap means the bounded buffer slid past this follower (it
   * read slower than the run wrote): everything published is committed, so the Store has the missing
   * chunks; they are read there, then the follower goes on live.
   */
  const follow = (after: number): Stream.Stream<Chunk, NotFound | StoreError> =>
    pulling(Effect.gen(function*() {
      const scope = yield* Effect.scope
      const live = yield* PubSub.subscribe(pubsub)
      // The last seq this follower has passed on; whether it has passed the stop_reason; whether the
      // log was closed (then it ends with what was published, after any Store read in progress).
      let last = after
      let done = false
      let shut = closed
      let gap = false
      // A read of the Store in progress, in a scope of its own, and where the follower goes after it.
      let reading: OpenPull<Chunk, NotFound | StoreError> | undefined
      let afterReading: "live" | "check" | "end" = "live"
      // What of a batch continues the seq, up to the stop_reason or a gap.
      const pass = (batch: Iterable<Chunk | null>): EChunk.Chunk<Chunk> => {
        const out: Array<Chunk> = []
        for (const chunk of batch) {
          if (chunk === null) {
            shut = true
            break
          }
          if (chunk.seq <= last) continue
          if (chunk.seq !== last + 1) {
            gap = true
            break
          }
          out.push(chunk)
          last = chunk.seq
          if (isStop(chunk)) {
            done = true
            break
          }
        }
        return EChunk.unsafeFromArray(out)
      }
      const read = (then: typeof afterReading) =>
        Effect.map(openPull(scope, store.readChunks(runId, last)), (opened) => {
          reading = opened
          afterReading = then
        })
      const next: Effect.Effect<EChunk.Chunk<Chunk> | undefined, NotFound | StoreError> = Effect.suspend(() => {
        if (done) return Effect.succeed(undefined)
        if (reading !== undefined) {
          const current = reading
          return Effect.matchEffect(current.pull, {
            onFailure: Option.match({
              onSome: (error) => Effect.fail(error),
              onNone: () => {
                reading = undefined
                return Effect.zipRight(Scope.close(current.scope, Exit.void), afterStore)
              }
            }),
            onSuccess: (batch) => {
              const passed = pass(batch)
              return EChunk.isEmpty(passed) ? next : Effect.succeed(passed)
            }
          })
        }
        if (shut) return Effect.succeed(undefined)
        return Effect.flatMap(takeBatch(live), (batch) => {
          const passed = pass(batch)
          if (gap) {
            gap = false
            return EChunk.isEmpty(passed) ? Effect.zipRight(read("live"), next) : Effect.as(read("live"), passed)
          }
          return EChunk.isEmpty(passed) ? next : Effect.succeed(passed)
        })
      })
      // A run that has finished has all its chunks in the Store (its end commits before it is
      // published): read the rest there, so a follower that joins at or after the end ends too.
      const afterStore: Effect.Effect<EChunk.Chunk<Chunk> | undefined, NotFound | StoreError> = Effect.suspend(() => {
        if (afterReading === "end") return Effect.succeed(undefined)
        if (afterReading === "live") return next
        return Effect.flatMap(store.getRun(runId), (stored) => Effect.zipRight(stored.status !== "running" ? read("end") : Effect.void, next))
      })
      // Subscribed first, then looked: a chunk published before is among the recent ones, any
      // later one comes live (one that is both is passed once, by its seq).
      const base = recent.length > 0 ? recent[0]!.seq - 1 : published
      if (after >= base) {
        const missed = pass(recent)
        if (stopped) done = true
        if (EChunk.isEmpty(missed)) return next
        let sent = false
        // The missed chunks first (even when they end the run), then the live ones.
        return Effect.suspend(() => (sent ? next : ((sent = true), Effect.succeed(missed))))
      }
      yield* read("check")
      return next
    }))

  const holdUsage = (record: UsageRecord) => void held.push(record)
  const close = Effect.suspend(() => {
    closed = true
    return PubSub.publish(pubsub, null)
  })
  const log: RunLog = { runId, conversationId, emit, follow, holdUsage, close }
  return log
})

/**
 * A run that is not live in this process (finished, or owned by another process on the same file):
 * read the Store, and while the run is still running, look again after a short pause — or, given
 * `idle`, once it says so (a cluster runner hears of the owner's commits; RunTail).
 */
export const followStored = (
  store: Store["Type"],
  runId: RunId,
  after: number,
  pollMs = 200,
  idle: (ms: number) => Effect.Effect<void> = Effect.sleep
): Stream.Stream<Chunk, NotFound | StoreError> =>
  Stream.paginateChunkEffect({ after, done: false }, (cursor) =>
    Effect.gen(function*() {
      const chunks = yield* Stream.runCollect(store.readChunks(runId, cursor.after))
      const last = Option.getOrUndefined(EChunk.last(chunks))
      const done = last !== undefined && isStop(last)
      if (!done && chunks.length === 0) {
        // A run's end commits with its status: one that ended since the read above has its last
        // chunks in the Store now; read them, then stop.
        if ((yield* store.getRun(runId)).status !== "running") {
          return [yield* Stream.runCollect(store.readChunks(runId, cursor.after)), Option.none()] as const
        }
      }
      // The read took everything committed so far: the next one waits for more (at once, when
      // notices came meanwhile), rather than ask the Store again only to find nothing.
      if (!done) yield* idle(pollMs)
      const next = { after: last?.seq ?? cursor.after, done }
      return [chunks, done ? Option.none() : Option.some(next)] as const
    })
  ).pipe(Stream.takeUntil(isStop))
