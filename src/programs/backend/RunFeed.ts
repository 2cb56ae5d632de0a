import { Chunk as EChunk, Effect, Option, PubSub, Ref, Stream } from "effect"
import type { NotFound, StoreError } from "../../domain/Errors.js"
import type { Chunk } from "../../domain/Events.js"
import type { RunId } from "../../domain/Ids.js"
import type { Store } from "../../services/Store.js"

/**
 * The live side of one run: the producer commits each chunk to the Store, then publishes it here.
 * A follower subscribes first, then reads the Store to its end, then takes live chunks with a higher
 * seq: no gap (anything committed after the read was published after the subscription) and no
 * duplicate (the seq filter). See research/effect3-recipes.md §4.
 */
export interface RunFeed {
  readonly runId: RunId
  readonly publish: (chunks: ReadonlyArray<Chunk>) => Effect.Effect<void>
  readonly follow: (after: number) => Stream.Stream<Chunk, NotFound | StoreError>
}

const isStop = (chunk: Chunk): boolean => chunk.type === "stop_reason"

export const makeRunFeed = (store: Store["Type"], runId: RunId): Effect.Effect<RunFeed> =>
  Effect.map(PubSub.unbounded<Chunk>(), (pubsub) => ({
    runId,
    publish: (chunks) => Effect.asVoid(PubSub.publishAll(pubsub, chunks)),
    follow: (after) =>
      Stream.unwrapScoped(
        Effect.gen(function*() {
          const live = yield* PubSub.subscribe(pubsub)
          const last = yield* Ref.make(after)
          const seen = <E>(stream: Stream.Stream<Chunk, E>) => Stream.tap(stream, (c) => Ref.set(last, c.seq))
          const backlog = seen(store.readChunks(runId, after))
          // A run that has finished has all its chunks in the Store (its end commits before it is
          // published): read the rest there, so a follower that joins at or after the end ends too.
          const rest = Stream.unwrap(
            Effect.gen(function*() {
              const run = yield* store.getRun(runId)
              const from = yield* Ref.get(last)
              if (run.status !== "running") return store.readChunks(runId, from)
              return seen(Stream.fromQueue(live).pipe(Stream.filter((c) => c.seq > from)))
            })
          )
          return backlog.pipe(Stream.concat(rest), Stream.takeUntil(isStop))
        })
      )
  }))

/**
 * A run that is not live in this process (finished, or owned by another process on the same file):
 * read the Store, and while the run is still running, look again after a short pause.
 */
export const followStored = (
  store: Store["Type"],
  runId: RunId,
  after: number,
  pollMs = 200
): Stream.Stream<Chunk, NotFound | StoreError> =>
  Stream.paginateChunkEffect({ after, done: false }, (cursor) =>
    Effect.gen(function*() {
      const chunks = yield* Stream.runCollect(store.readChunks(runId, cursor.after))
      const last = Option.getOrUndefined(EChunk.last(chunks))
      let done = last !== undefined && isStop(last)
      if (!done && chunks.length === 0) {
        if ((yield* store.getRun(runId)).status !== "running") done = true
        else yield* Effect.sleep(pollMs)
      }
      const next = { after: last?.seq ?? cursor.after, done }
      return [chunks, done ? Option.none() : Option.some(next)] as const
    })
  ).pipe(Stream.takeUntil(isStop))
