import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Chunk as EChunk, Data, Effect, Either, Exit, Option, ParseResult, Schedule, Scope, Stream } from "effect"
import { type BackendError, StreamBroken } from "../../domain/Errors.js"
import { decodeEventJson } from "../../domain/EventJson.js"
import { type Chunk, isChunk } from "../../domain/Events.js"
import type { RunId } from "../../domain/Ids.js"
import type { Budgets } from "../../domain/Recovery.js"
import { policy } from "../../domain/RecoverySchedule.js"
import { type BatchStep, mapBatches, type OpenPull, openPull, pulling } from "../Batches.js"
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
 * counts consecutive drops: a connection that delivered chunks starts the count again, so a long run
 * over a flaky network is not cut short by drops it recovered from. Terminal errors pass through.
 * One pull per read, in a plain loop: the policy's schedule is driven by hand where a drop happens,
 * rather than by a chain of stream stages that each batch would cross (they cost a read several
 * times what decoding it does).
 */
export const resumable = (
  open: (cursor: Cursor) => Stream.Stream<Chunk, BackendError | Dropped>,
  options: { readonly budgets: Budgets; readonly runId?: RunId; readonly after?: number }
): Stream.Stream<Chunk, BackendError> =>
  pulling(Effect.gen(function*() {
    const scope = yield* Effect.scope
    const driver = yield* Schedule.driver(policy<StreamBroken>(options.budgets))
    let cursor: Cursor = { runId: options.runId, after: options.after ?? 0 }
    let done = false
    // Whether the policy has counted a drop since the last chunk delivered.
    let dropped = false
    let connection: OpenPull<Chunk, BackendError | Dropped> | undefined
    const connect = Effect.map(openPull(scope, Stream.suspend(() => open(cursor))), (opened) => {
      connection = opened
    })
    const close = (exit: Exit.Exit<unknown, unknown>) => {
      const current = connection
      connection = undefined
      return current === undefined ? Effect.void : Scope.close(current.scope, exit)
    }
    const broken = (message: string) => new StreamBroken({ ...(cursor.runId === undefined ? {} : { runId: cursor.runId }), message })
    // A drop: the policy waits and goes again, or gives up with the last step it took.
    const reconnect = (failure: StreamBroken): Effect.Effect<EChunk.Chunk<Chunk> | undefined, BackendError> =>
      Effect.matchEffect(driver.next(failure), {
        onFailure: () =>
          Effect.flatMap(Effect.option(driver.last), (step) =>
            Effect.fail(broken(`${failure.message} (gave up after ${Option.match(step, { onNone: () => 0, onSome: (s) => s.attempt })} reconnects)`))),
        onSuccess: () => {
          dropped = true
          return next
        }
      })
    // A connection that ends cleanly carried the server's end marker; a backend error is the run's answer, not a drop.
    const ended = (failure: Option.Option<BackendError | Dropped>): Effect.Effect<EChunk.Chunk<Chunk> | undefined, BackendError> => {
      if (Option.isNone(failure)) {
        done = true
        return Effect.as(close(Exit.void), undefined)
      }
      const error = failure.value
      return error._tag === "Dropped"
        ? Effect.zipRight(close(Exit.void), reconnect(broken(error.message)))
        : Effect.zipRight(close(Exit.void), Effect.fail(error))
    }
    // What an earlier connection delivered already is dropped; the cursor moves past the rest.
    const fresh = (batch: EChunk.Chunk<Chunk>): Array<Chunk> => {
      const out: Array<Chunk> = []
      for (const chunk of batch) {
        if (chunk.seq <= cursor.after) continue
        out.push(chunk)
        cursor = { runId: chunk.run_id, after: chunk.seq }
        if (chunk.type === "stop_reason") {
          done = true
          break
        }
      }
      return out
    }
    const next: Effect.Effect<EChunk.Chunk<Chunk> | undefined, BackendError> = Effect.suspend(() => {
      if (done) return Effect.as(close(Exit.void), undefined)
      if (connection === undefined) return Effect.zipRight(connect, next)
      return Effect.matchEffect(connection.pull, {
        onFailure: ended,
        onSuccess: (batch) => {
          const out = fresh(batch)
          if (out.length === 0) return next
          const chunks = EChunk.unsafeFromArray(out)
          if (!dropped) return Effect.succeed(chunks)
          dropped = false
          return Effect.as(driver.reset, chunks)
        }
      })
    })
    return next
  }))
