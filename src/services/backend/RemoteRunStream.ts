import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Chunk as EChunk, Data, Effect, Either, Option, ParseResult, Ref, Stream } from "effect"
import { type BackendError, StreamBroken } from "../../domain/Errors.js"
import { decodeEventJson } from "../../domain/EventJson.js"
import { type Chunk, isChunk } from "../../domain/Events.js"
import type { RunId } from "../../domain/Ids.js"
import type { Budgets } from "../../domain/Recovery.js"
import { retryStream } from "../../domain/RecoverySchedule.js"
import { type BatchStep, mapBatches } from "../Batches.js"
import { decodeSse, type SseEvent } from "../Sse.js"
import { realClock } from "../RealClock.js"
import { watchdog } from "../Watchdog.js"

/** One connection of a run's stream ended early (network, server restart, no stop_reason). */
export class Dropped extends Data.TaggedError("Dropped")<{ readonly message: string }> {}

/** Where the next connection resumes: the run (once known) and the last seq seen. */
export interface Cursor {
  readonly runId: RunId | undefined
  readonly after: number
}

/** Fails with Dropped when the source stays silent for `ms` (the server sends a heartbeat every 15 s), on the wall clock. */
const idleTimeout = (ms: number) =>
  watchdog({ firstMs: ms, idleMs: ms, clock: realClock, onTimeout: () => new Dropped({ message: `no data for ${ms} ms` }) })

const excerpt = (data: string) => (data.length > 120 ? `${data.slice(0, 120)}…` : data)

/** One batch of SSE events (one read) → its chunks, up to the server's `end` event. */
const decodeBatch = (events: EChunk.Chunk<SseEvent>): BatchStep<Chunk, Dropped> => {
  const out: Array<Chunk> = []
  for (const event of events) {
    if (event.event === "end") return { out, stop: true }
    const decoded = decodeEventJson(event.data)
    if (Either.isLeft(decoded)) {
      const reason = excerpt(ParseResult.TreeFormatter.formatErrorSync(decoded.left))
      return { out, fail: new Dropped({ message: `baton server: unexpected event ${excerpt(event.data)}: ${reason}` }) }
    }
    if (!isChunk(decoded.right)) return { out, fail: new Dropped({ message: `event without run_id/seq: ${decoded.right.type}` }) }
    out.push(decoded.right)
  }
  return { out }
}

/**
 * A `text/event-stream` body → chunks; anything wrong with the bytes is a drop, and so is a body that
 * ends without the server's `end` event (the connection died, whatever the bytes looked like).
 */
export const chunksOf = (response: HttpClientResponse.HttpClientResponse, idleMs: number): Stream.Stream<Chunk, Dropped> =>
  decodeSse(response.stream.pipe(idleTimeout(idleMs))).pipe(
    mapBatches(decodeBatch, () => new Dropped({ message: "the connection closed before the stream's end" })),
    Stream.catchTags({
      ProviderMalformed: (e) => Stream.fail(new Dropped({ message: e.message })),
      ResponseError: (e) => Stream.fail(new Dropped({ message: `connection lost: ${e.message}` }))
    })
  )

/**
 * One unbroken run stream over many connections. `open` makes one connection from the cursor; when it
 * drops (or ends without a stop_reason) the next one resumes with `after = last seq`, after the
 * recovery policy's delay. Every seq is emitted once, in order, up to the stop_reason. The budget
 * counts consecutive drops: a connection that delivered chunks starts the count again (retryStream
 * restarts it on every element), so a long run over a flaky network is not cut short by drops it
 * recovered from. Terminal errors pass through.
 */
export const resumable = (
  open: (cursor: Cursor) => Stream.Stream<Chunk, BackendError | Dropped>,
  options: { readonly budgets: Budgets; readonly runId?: RunId; readonly after?: number }
): Stream.Stream<Chunk, BackendError> =>
  Stream.unwrap(Effect.map(Ref.make<Cursor>({ runId: options.runId, after: options.after ?? 0 }), (cursor) => {
    const broken = (message: string) =>
      Effect.flatMap(Ref.get(cursor), ({ runId }) => Effect.fail(new StreamBroken({ ...(runId === undefined ? {} : { runId }), message })))
    // A backend error is the run's answer, not a drop: it travels past the policy as an element and
    // fails the stream there. A connection that ends cleanly carried the server's end marker.
    const connection = Stream.unwrap(Effect.map(Ref.get(cursor), open)).pipe(
      // One step per batch: drop what an earlier connection delivered already, move the cursor past the rest.
      Stream.mapChunksEffect((batch) =>
        Ref.modify(cursor, (at): [EChunk.Chunk<Chunk>, Cursor] => {
          const fresh = EChunk.filter(batch, (chunk) => chunk.seq > at.after)
          const last = EChunk.last(fresh)
          return [fresh, Option.isSome(last) ? { runId: last.value.run_id, after: last.value.seq } : at]
        })
      ),
      Stream.takeUntil((chunk) => chunk.type === "stop_reason"),
      Stream.map(Either.right),
      Stream.catchAll((e) =>
        e._tag === "Dropped" ? Stream.fromEffect(broken(e.message)) : Stream.succeed(Either.left(e)))
    )
    return retryStream(connection, {
      budgets: options.budgets,
      orElse: (failure, step) =>
        Stream.fromEffect(broken(`${failure.message} (gave up after ${Option.match(step, { onNone: () => 0, onSome: (s) => s.attempt })} reconnects)`))
    }).pipe(mapBatches((items): BatchStep<Chunk, BackendError> => {
      const out: Array<Chunk> = []
      for (const item of items) {
        if (Either.isLeft(item)) return { out, fail: item.left }
        out.push(item.right)
      }
      return { out }
    }))
  }))
