import type * as Sse from "@effect/experimental/Sse"
import { Either, ParseResult, Schema, Stream } from "effect"
import { ProviderMalformed } from "../domain/ProviderError.js"
import { type BatchStep, mapBatches } from "./Batches.js"
import { makeSseParser } from "./SseParser.js"

/**
 * `text/event-stream` bodies as events, shared by the model providers and the remote backend's run
 * streams. Malformed framing or data is ProviderMalformed; each reader decides what that means.
 */

export type SseEvent = Sse.Event

/**
 * Bytes → SSE events (SseParser). Only events closed by a blank line are dispatched: a partial last
 * line (a cut body) stays in the parser and never reaches a decoder. `retry:` fields and `:`
 * comments carry nothing for a one-shot POST stream and are dropped by design.
 */
export const decodeSse = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>): Stream.Stream<SseEvent, E | ProviderMalformed, R> =>
  Stream.suspend(() => bytes.pipe(mapBatches(sseReader())))

/**
 * The step behind `decodeSse`, for a stage that goes on with the events in the same step (a provider
 * decodes them there, one stream stage instead of two). Made fresh for each stream: it keeps the parser.
 * One read in, its complete events out as one chunk: the batch every later stage keeps whole.
 */
export const sseReader = (): (reads: Iterable<Uint8Array>) => BatchStep<SseEvent, ProviderMalformed> => {
  const parser = makeSseParser()
  const text = new TextDecoder()
  return (reads) => {
    const out: Array<SseEvent> = []
    for (const read of reads) {
      const { error, events } = parser.feed(text.decode(read, { stream: true }))
      if (error !== undefined) return { out: [], fail: new ProviderMalformed({ reason: "undecodable_event", message: `SSE: ${error}` }) }
      for (const event of events) out.push(event)
    }
    return { out }
  }
}

/** A JSON object (not an array), as the schema's structs require. */
export const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const excerpt = (data: string) => (data.length > 120 ? `${data.slice(0, 120)}…` : data)

/**
 * JSON text → A: invalid JSON is `bad_json`, JSON of the wrong shape is `undecodable_event`. `fast`
 * may recognise the frequent shapes (a text delta) in a few checks instead of the schema: it answers
 * only for JSON the schema accepts, with the fields the decoder reads as the schema would give them,
 * and undefined for anything else, which the schema then decides.
 */
export const decodeData = <A, I>(schema: Schema.Schema<A, I>, provider: string, fast?: (json: unknown) => A | undefined) => {
  const decode = Schema.decodeUnknownEither(schema)
  return (data: string): Either.Either<A, ProviderMalformed> => {
    let json: unknown
    try {
      json = JSON.parse(data)
    } catch {
      return Either.left(
        new ProviderMalformed({ reason: "bad_json", message: `${provider}: event data is not JSON: ${excerpt(data)}` })
      )
    }
    const known = fast?.(json)
    if (known !== undefined) return Either.right(known)
    return Either.mapLeft(decode(json), (error) =>
      new ProviderMalformed({
        reason: "undecodable_event",
        message: `${provider}: unexpected event ${excerpt(data)}: ${
          excerpt(ParseResult.TreeFormatter.formatErrorSync(error))
        }`
      }))
  }
}

