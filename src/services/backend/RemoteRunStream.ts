import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Data, Effect, Either, Option, Stream } from "effect"
import { type BackendError, StreamBroken } from "../../domain/Errors.js"
import { type Chunk, isChunk, TaskEvent } from "../../domain/Events.js"
import type { RunId } from "../../domain/Ids.js"
import { type Budgets, noAttempts, step } from "../../domain/Recovery.js"
import { decodeData, decodeSse } from "../Sse.js"
import { realClock } from "../RealClock.js"

/** One connection of a run's stream ended early (network, server restart, no stop_reason). */
export class Dropped extends Data.TaggedError("Dropped")<{ readonly message: string }> {}

/** Where the next connection resumes: the run (once known) and the last seq seen. */
export interface Cursor {
  readonly runId: RunId | undefined
  readonly after: number
}

/** Fails with Dropped when the source stays silent for `ms` (the server sends a heartbeat every 15 s). */
const idleTimeout = (ms: number) => <A, E, R>(self: Stream.Stream<A, E, R>): Stream.Stream<A, E | Dropped, R> =>
  Stream.unwrapScoped(Effect.map(Stream.toPull(self), (pull) =>
    Stream.repeatEffectChunkOption(pull.pipe(
      Effect.timeoutFail({
        duration: ms,
        onTimeout: (): Option.Option<E | Dropped> => Option.some(new Dropped({ message: `no data for ${ms} ms` }))
      }),
      Effect.withClock(realClock)
    ))))

const decodeEvent = decodeData(TaskEvent, "baton server")

/**
 * A `text/event-stream` body → chunks; anything wrong with the bytes is a drop, and so is a body that
 * ends without the server's `end` event (the connection died, whatever the bytes looked like).
 */
export const chunksOf = (response: HttpClientResponse.HttpClientResponse, idleMs: number): Stream.Stream<Chunk, Dropped> =>
  decodeSse(response.stream.pipe(idleTimeout(idleMs))).pipe(
    Stream.concat(Stream.fail(new Dropped({ message: "the connection closed before the stream's end" }))),
    Stream.takeWhile((event) => event.event !== "end"),
    Stream.mapEffect((event) =>
      Either.match(decodeEvent(event.data), {
        onLeft: (e) => Effect.fail(new Dropped({ message: e.message })),
        onRight: (chunk) => (isChunk(chunk) ? Effect.succeed(chunk) : Effect.fail(new Dropped({ message: `event without run_id/seq: ${chunk.type}` })))
      })),
    Stream.catchTags({
      ProviderMalformed: (e) => Stream.fail(new Dropped({ message: e.message })),
      ResponseError: (e) => Stream.fail(new Dropped({ message: `connection lost: ${e.message}` }))
    })
  )

/**
 * One unbroken run stream over many connections. `open` makes one connection from the cursor; when it
 * drops (or ends without a stop_reason) the next one resumes with `after = last seq`, after the
 * recovery policy's delay. Every seq is emitted once, in order, up to the stop_reason. The budget
 * counts consecutive drops: a connection that delivered chunks starts the count again, so a long run
 * over a flaky network is not cut short by drops it recovered from. Terminal errors pass through.
 */
export const resumable = (
  open: (cursor: Cursor) => Stream.Stream<Chunk, BackendError | Dropped>,
  options: { readonly budgets: Budgets; readonly runId?: RunId; readonly after?: number }
): Stream.Stream<Chunk, BackendError> =>
  Stream.suspend(() => {
    let runId = options.runId
    let last = options.after ?? 0
    let attempts = noAttempts
    let stopped = false
    let drop = "the stream ended without a stop_reason"

    const connection = () => open({ runId, after: last }).pipe(
      Stream.filter((chunk) => chunk.seq > last),
      Stream.tap((chunk) =>
        Effect.sync(() => {
          runId = chunk.run_id
          last = chunk.seq
          attempts = noAttempts
          stopped = chunk.type === "stop_reason"
        })),
      Stream.takeUntil((chunk) => chunk.type === "stop_reason"),
      // A connection that ends cleanly carried the server's end marker: nothing more will come.
      Stream.concat(Stream.fromEffect(Effect.sync(() => {
        stopped = true
      })).pipe(Stream.drain)),
      Stream.catchTag("Dropped", (e) => {
        drop = e.message
        return Stream.empty
      })
    )

    const reconnect = Effect.suspend(() => {
      if (stopped) return Effect.fail(Option.none())
      const next = step(attempts, new StreamBroken({ ...(runId === undefined ? {} : { runId }), message: drop }), options.budgets)
      attempts = next.attempts
      const reason = drop
      drop = "the stream ended without a stop_reason"
      if (next.decision._tag !== "Retry") {
        return Effect.fail(Option.some(
          new StreamBroken({ ...(runId === undefined ? {} : { runId }), message: `${reason} (gave up after ${next.attempt} reconnects)` })
        ))
      }
      return Effect.as(Effect.sleep(next.decision.delayMs), Stream.suspend(connection))
    })

    return Stream.concat(Stream.suspend(connection), Stream.flatten(Stream.repeatEffectOption(reconnect)))
  })
