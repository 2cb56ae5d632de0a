import * as Sse from "@effect/experimental/Sse"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Chunk as EChunk, Duration, Effect, Option, Stream } from "effect"
import { PassThrough } from "node:stream"
import type { BackendError } from "../../domain/Errors.js"
import { encodeEventJson } from "../../domain/EventJson.js"
import type { Chunk } from "../../domain/Events.js"
import { realClock } from "../../services/RealClock.js"

export interface SseOptions {
  /** A `: heartbeat` comment this often, so clients and proxies can tell a live connection from a dead one. */
  readonly heartbeatMs: number
  /** Completes when the server shuts down: open streams end there and their clients reconnect. */
  readonly closing: Effect.Effect<void>
}

export const HEARTBEAT = ": heartbeat\n\n"

/** How a run's stream to a client ended: the last seq it carried, and whether that was the stop_reason. */
export interface StreamEnd {
  readonly lastSeq: number
  readonly complete: boolean
}

/** Told of each run stream a client opens (its first chunk); answers what to do when that stream ends. */
export type Track = (first: Chunk) => Effect.Effect<(end: StreamEnd) => Effect.Effect<void>>

/** Bytes of body waiting for the socket (a slow client backs up into the run log, which reads the Store). */
const BODY_BUFFER = 64 * 1024

/**
 * Sent when a run's stream is complete (after its stop_reason, or at once for a follower that asked
 * for what comes after the end). Without it a client cannot tell "nothing more will come" from a
 * connection that died, and would resume forever. It carries data because an SSE event with an empty
 * data field is never dispatched.
 */
export const END_EVENT = Sse.encoder.write({ _tag: "Event", event: "end", id: undefined, data: "end" })

/** One chunk as one SSE event: `id: <runId>:<seq>`, `data:` the chunk's JSON. */
export const sseEvent = (chunk: Chunk): string =>
  Sse.encoder.write({ _tag: "Event", event: "message", id: `${chunk.run_id}:${chunk.seq}`, data: encodeEventJson(chunk) })

/** A batch of chunks as one piece of the body: one socket write per batch, not per chunk. */
const sseBatch = (batch: EChunk.Chunk<Chunk>): string => {
  let text = ""
  for (const chunk of batch) text += sseEvent(chunk)
  return text
}

/** The first non-empty pull, or an empty chunk when the stream ends without any element. */
const firstChunk = <A, E>(pull: Effect.Effect<EChunk.Chunk<A>, Option.Option<E>>): Effect.Effect<EChunk.Chunk<A>, E> =>
  Effect.matchEffect(pull, {
    onFailure: Option.match({ onNone: () => Effect.succeed(EChunk.empty<A>()), onSome: (e) => Effect.fail(e) }),
    onSuccess: (chunk) => (EChunk.isEmpty(chunk) ? firstChunk(pull) : Effect.succeed(chunk))
  })

/**
 * A run's chunks as a `text/event-stream` response. The first chunk is pulled before answering, so a
 * refused admission (Conflict, ApprovalPending, NotFound…) becomes a typed HTTP error and not a 200
 * with a broken body. A failure after that ends the body without a stop_reason, which the client
 * treats as a dropped connection and resumes from its last seq. Uses the request's scope.
 */
export const sseResponse = Effect.fn("Server.sseResponse")(function*(
  chunks: Stream.Stream<Chunk, BackendError>,
  options: SseOptions,
  track?: Track
) {
  const pull = yield* Stream.toPull(chunks)
  const head = yield* firstChunk(pull)
  const first = EChunk.head(head)
  let lastSeq = Option.match(first, { onNone: () => 0, onSome: (c) => c.seq })
  let complete = false
  if (Option.isSome(first) && track !== undefined) {
    const ended = yield* track(first.value)
    // The request's scope ends after the body: told how far this client got, the server can take over.
    yield* Effect.addFinalizer(() => Effect.suspend(() => ended({ lastSeq, complete })))
  }
  // One Node stream is the body, piped to the socket by the HTTP server: the run's batches, a
  // heartbeat now and then, the end at shutdown are written into it by plain fibers in the request's
  // scope, each batch one write. A Stream body would cost a stream of streams, a queue and the
  // server's own fiber running them (≈ 800 Effect steps a send). The run's batches are pulled in a
  // plain loop: a send's few batches pay for no stream stages of their own.
  const out = new PassThrough({ highWaterMark: BODY_BUFFER })
  const open = () => !out.writableEnded && !out.destroyed
  const write = (text: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (!open() || out.write(text)) return Effect.void
      // Full: wait for the socket to take some (the client going away ends the request's scope, and this wait with it).
      return Effect.async<void>((resume) => {
        const drained = () => resume(Effect.void)
        out.once("drain", drained)
        return Effect.sync(() => void out.off("drain", drained))
      })
    })
  const end = Effect.sync(() => void (open() && out.end()))
  const offer = (batch: EChunk.Chunk<Chunk>) => {
    const last = EChunk.last(batch)
    if (Option.isNone(last)) return Effect.void
    lastSeq = last.value.seq
    complete = last.value.type === "stop_reason"
    return write(sseBatch(batch))
  }
  const pump: Effect.Effect<void, BackendError> = Effect.flatMap(
    Effect.matchEffect(pull, {
      onFailure: Option.match({ onNone: () => Effect.succeed(false), onSome: (e) => Effect.fail(e) }),
      onSuccess: (batch) => Effect.as(offer(batch), true)
    }),
    (more) => (more ? pump : write(END_EVENT))
  )
  yield* Effect.forkScoped(offer(head).pipe(
    Effect.zipRight(pump),
    Effect.catchAllCause((cause) => Effect.logWarning("run stream ended early; the client will resume", cause)),
    Effect.zipRight(end)
  ))
  yield* Effect.forkScoped(Effect.forever(Effect.zipRight(realClock.sleep(Duration.millis(options.heartbeatMs)), write(HEARTBEAT))))
  yield* Effect.forkScoped(Effect.zipRight(options.closing, end))
  return HttpServerResponse.raw(out, {
    contentType: "text/event-stream",
    // A stream is its connection's last response: when it ends (also at shutdown) the socket closes.
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no", connection: "close" }
  })
})
