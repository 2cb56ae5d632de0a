import * as Sse from "@effect/experimental/Sse"
import { Effect, Either, ParseResult, Schema, Stream } from "effect"
import { ProviderMalformed } from "../domain/ProviderError.js"

/**
 * `text/event-stream` bodies as events, shared by the model providers and the remote backend's run
 * streams. Malformed framing or data is ProviderMalformed; each reader decides what that means.
 */

export type SseEvent = Sse.Event

/**
 * Bytes → SSE events with the `@effect/experimental` parser. Only events closed by a blank line are
 * dispatched: a partial last line (a cut body) stays in the parser's buffer and never reaches a decoder.
 * `retry:` fields and `:` comments carry nothing for a one-shot POST stream and are dropped by design.
 */
export const decodeSse = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>): Stream.Stream<SseEvent, E | ProviderMalformed, R> =>
  Stream.suspend(() => {
    const pending: Array<SseEvent> = []
    const parser = Sse.makeParser((event) => {
      if (event._tag === "Event") pending.push(event)
    })
    return bytes.pipe(
      Stream.decodeText(),
      Stream.mapConcatEffect((text) => {
        const error = parser.feed(text)
        return error === undefined
          ? Effect.succeed(pending.splice(0))
          : Effect.fail(new ProviderMalformed({ reason: "undecodable_event", message: `SSE: ${error.message}` }))
      })
    )
  })

const excerpt = (data: string) => (data.length > 120 ? `${data.slice(0, 120)}…` : data)

/** JSON text → A: invalid JSON is `bad_json`, JSON of the wrong shape is `undecodable_event`. */
export const decodeData = <A, I>(schema: Schema.Schema<A, I>, provider: string) => {
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
    return Either.mapLeft(decode(json), (error) =>
      new ProviderMalformed({
        reason: "undecodable_event",
        message: `${provider}: unexpected event ${excerpt(data)}: ${
          excerpt(ParseResult.TreeFormatter.formatErrorSync(error))
        }`
      }))
  }
}

