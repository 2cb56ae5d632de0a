import { Channel, type Chunk, Clock, Effect, Either, Mailbox, Option, Scope, Stream } from "effect"
import { type BatchStep, mapBatches } from "../Batches.js"
import type { ProviderError } from "../../domain/ProviderError.js"
import { ProviderMalformed, ProviderTimeout } from "../../domain/ProviderError.js"
import type { ProviderEvent } from "../../domain/ProviderEvent.js"
import { type SseEvent, sseReader } from "../Sse.js"

/**
 * The byte-level half of every live Provider above SSE framing (services/Sse.ts): first-byte / stall
 * timeouts, and the driver that runs a wire decoder so that every event is accounted for.
 */

export interface Timeouts {
  /** From sending the request until the first body byte (covers connect, headers and the model's first token). */
  readonly firstByteMs: number
  /** Longest silence between two body chunks once bytes flow. */
  readonly stallMs: number
}

/**
 * Fails with ProviderTimeout when the stream stays silent too long: until its first chunk
 * `firstByteMs`, then `stallMs` after each chunk. Raw byte chunks count as liveness, so SSE comments
 * used as keep-alives (OpenRouter) keep a stream alive. One reader fiber and one watchdog per stream,
 * the watchdog re-armed by each read: no timer or fiber per read. Reads that arrive while the reader's
 * consumer is busy reach it together, as one batch. Before the first chunk the watchdog looks every
 * `stallMs` at most, so the stall deadline holds whichever timeout is longer.
 */
export const withTimeouts = (timeouts: Timeouts, provider: string) =>
<A, E, R>(self: Stream.Stream<A, E, R>): Stream.Stream<A, E | ProviderTimeout, R> =>
  openWithTimeouts(timeouts, provider)(Effect.succeed(self))

/**
 * `withTimeouts` over a stream that `open` makes (sending a request, say): the reader runs `open`
 * itself, in its own scope, so the first-byte wait covers it, and no stage of its own wraps it.
 */
export const openWithTimeouts = (timeouts: Timeouts, provider: string) =>
<A, E, R>(open: Effect.Effect<Stream.Stream<A, E, R>, E, R | Scope.Scope>): Stream.Stream<A, E | ProviderTimeout, Exclude<R, Scope.Scope>> =>
  Stream.fromChannel(Channel.acquireUseRelease(
    Effect.flatMap(Scope.make(), (scope) => Effect.map(Scope.extend(setUp(timeouts, provider, open), scope), (out) => ({ out, scope }))),
    ({ out }) => Mailbox.toChannel(out),
    ({ scope }, exit) => Scope.close(scope, exit)
  ))

/**
 * The mailbox the consumer reads, with the reader and the watchdog forked in the caller's scope. A
 * channel that holds its own scope costs fewer steps than `Stream.unwrapScoped` (a stream of streams).
 */
const setUp = <A, E, R>(timeouts: Timeouts, provider: string, open: Effect.Effect<Stream.Stream<A, E, R>, E, R | Scope.Scope>) =>
  Effect.gen(function*() {
    const out = yield* Mailbox.make<A, E | ProviderTimeout>({ capacity: READ_AHEAD })
    let started = false
    let deadline = (yield* Clock.currentTimeMillis) + timeouts.firstByteMs
    const watchdog = Effect.gen(function*() {
      for (;;) {
        const now = yield* Clock.currentTimeMillis
        if (now >= deadline) break
        // Never longer than stallMs: the first chunk moves the deadline nearer than a first-byte wait
        // already begun would look again (a 300 s first-byte wait would hide a 500 ms stall).
        yield* Effect.sleep(Math.min(deadline - now, timeouts.stallMs))
      }
      const afterMs = started ? timeouts.stallMs : timeouts.firstByteMs
      yield* out.fail(
        new ProviderTimeout({
          phase: started ? "stall" : "first_byte",
          afterMs,
          message: started
            ? `${provider}: stream stalled, nothing received for ${afterMs} ms`
            : `${provider}: no response within ${afterMs} ms`
        })
      )
    })
    // The reader pulls the source itself: `Stream.run*` would fork one more fiber per stream (the
    // channel executor's), and the pull loop is a handful of steps a read.
    const read = (pull: Effect.Effect<Chunk.Chunk<A>, Option.Option<E>, R>): Effect.Effect<void, Option.Option<E>, R> =>
      Effect.flatMap(pull, (chunk) =>
        chunk.length === 0 ? read(pull) : Effect.flatMap(Clock.currentTimeMillis, (now) => {
          started = true
          deadline = now + timeouts.stallMs
          return Effect.zipRight(out.offerAll(chunk), read(pull))
        }))
    // The request and the body's pull live in the reader's own scope: released by the reader as it
    // ends or is interrupted, never while it still pulls.
    const reader = open.pipe(
      Effect.flatMap(Stream.toPull),
      Effect.mapError(Option.some),
      Effect.flatMap(read),
      Effect.scoped,
      Effect.catchAll((error) => (Option.isSome(error) ? Effect.fail(error.value) : Effect.void)),
      Mailbox.into(out)
    )
    // Set up uninterruptibly (the channel's acquire): the fibers themselves must stay interruptible.
    yield* Effect.forkScoped(Effect.interruptible(reader))
    yield* Effect.forkScoped(Effect.interruptible(watchdog))
    return out
  })

/** Reads the reader may get ahead of its consumer by. */
const READ_AHEAD = 16

/** What a decoder makes of one SSE event: events to emit, and whether it was the terminal event. */
export interface DecodeStep {
  readonly events: ReadonlyArray<ProviderEvent>
  readonly done: boolean
}

export const step = (events: ReadonlyArray<ProviderEvent>, done = false): DecodeStep => ({ events, done })

/** A stateful wire decoder, made fresh for each stream. */
export interface WireDecoder {
  readonly onEvent: (event: SseEvent) => Either.Either<DecodeStep, ProviderError>
  /** Name of the terminal event, for the truncation message. */
  readonly terminal: string
}

/**
 * Runs a decoder over SSE events: stops reading at the terminal event, and fails with
 * ProviderMalformed{truncated} when the body ends before it. The events of one read stay one chunk.
 */
export const runDecoder = (provider: string, make: () => WireDecoder) =>
<E, R>(events: Stream.Stream<SseEvent, E, R>): Stream.Stream<ProviderEvent, E | ProviderError, R> =>
  Stream.suspend(() => {
    const { step, onEnd } = decoding(provider, make())
    return events.pipe(mapBatches(step, onEnd))
  })

/**
 * Body bytes → provider events in one stream stage: SSE framing, then the decoder, in the same step
 * (`decodeSse` and `runDecoder` one after the other, without a channel between them).
 */
export const decodeBody = (provider: string, make: () => WireDecoder) =>
<E, R>(bytes: Stream.Stream<Uint8Array, E, R>): Stream.Stream<ProviderEvent, E | ProviderError, R> =>
  Stream.suspend(() => {
    const sse = sseReader()
    const { step, onEnd } = decoding(provider, make())
    return bytes.pipe(mapBatches((reads): BatchStep<ProviderEvent, ProviderError> => {
      const framed = sse(reads)
      if (framed.fail !== undefined) return { out: [], fail: framed.fail }
      return framed.out.length === 0 ? { out: [] } : step(framed.out)
    }, onEnd))
  })

const decoding = (provider: string, decoder: WireDecoder) => ({
  step: (batch: Iterable<SseEvent>): BatchStep<ProviderEvent, ProviderError> => {
    const out: Array<ProviderEvent> = []
    for (const event of batch) {
      const decoded = decoder.onEvent(event)
      if (Either.isLeft(decoded)) return { out, fail: decoded.left }
      for (const e of decoded.right.events) out.push(e)
      if (decoded.right.done) return { out, stop: true }
    }
    return { out }
  },
  onEnd: () => new ProviderMalformed({ reason: "truncated", message: `${provider}: stream ended before ${decoder.terminal}` })
})

export const undecodable = (provider: string, what: string) =>
  Either.left(new ProviderMalformed({ reason: "undecodable_event", message: `${provider}: ${what}` }))
