import * as Sse from "@effect/experimental/Sse"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Chunk as EChunk, Duration, Effect, Option, Stream } from "effect"
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
const sseBatch = (batch: EChunk.Chunk<Chunk>): EChunk.Chunk<string> => {
  let text = ""
  for (const chunk of batch) text += sseEvent(chunk)
  return text === "" ? EChunk.empty() : EChunk.of(text)
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
  onFirst: (chunk: Chunk) => Effect.Effect<void> = () => Effect.void
) {
  const pull = yield* Stream.toPull(chunks)
  const head = yield* firstChunk(pull)
  const first = EChunk.head(head)
  if (Option.isSome(first)) yield* onFirst(first.value)
  const events = Stream.fromChunk(head).pipe(
    Stream.concat(Stream.repeatEffectChunkOption(pull)),
    Stream.mapChunks(sseBatch),
    Stream.concat(Stream.succeed(END_EVENT)),
    Stream.catchAllCause((cause) =>
      Stream.drain(Stream.fromEffect(Effect.logWarning("run stream ended early; the client will resume", cause)))
    )
  )
  const heartbeats = Stream.repeatEffect(Effect.as(realClock.sleep(Duration.millis(options.heartbeatMs)), HEARTBEAT))
  const body = Stream.merge(events, heartbeats, { haltStrategy: "left" }).pipe(
    Stream.interruptWhen(options.closing),
    Stream.encodeText
  )
  return HttpServerResponse.stream(body, {
    contentType: "text/event-stream",
    // A stream is its connection's last response: when it ends (also at shutdown) the socket closes.
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no", connection: "close" }
  })
})
