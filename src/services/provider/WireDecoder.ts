import { Either, Stream } from "effect"
import { type BatchStep, mapBatches } from "../Batches.js"
import type { ProviderError } from "../../domain/ProviderError.js"
import { ProviderMalformed, ProviderTimeout } from "../../domain/ProviderError.js"
import type { ProviderEvent } from "../../domain/ProviderEvent.js"
import { type SseEvent, sseReader } from "../Sse.js"
import { watchdog, watchdogOpen } from "../Watchdog.js"

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
/**
 * Fails with ProviderTimeout when the stream stays silent too long: until its first chunk
 * `firstByteMs`, then `stallMs` after each chunk (services/Watchdog.ts: one watchdog per stream, none
 * per read; raw byte chunks count as liveness, so SSE comments used as keep-alives keep it alive).
 */
const bounds = (timeouts: Timeouts, provider: string) => ({
    firstMs: timeouts.firstByteMs,
    idleMs: timeouts.stallMs,
    onTimeout: (started: boolean) => {
      const afterMs = started ? timeouts.stallMs : timeouts.firstByteMs
      return new ProviderTimeout({
        phase: started ? "stall" : "first_byte",
        afterMs,
        message: started
          ? `${provider}: stream stalled, nothing received for ${afterMs} ms`
          : `${provider}: no response within ${afterMs} ms`
      })
    }
  })

export const withTimeouts = (timeouts: Timeouts, provider: string) => watchdog(bounds(timeouts, provider))

/**
 * `withTimeouts` over a stream that `open` makes (sending a request, say): the reader runs `open`
 * itself, in its own scope, so the first-byte wait covers it, and no stage of its own wraps it.
 */
export const openWithTimeouts = (timeouts: Timeouts, provider: string) => watchdogOpen(bounds(timeouts, provider))

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
