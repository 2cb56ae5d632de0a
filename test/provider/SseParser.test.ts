import * as Sse from "@effect/experimental/Sse"
import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { makeSseParser, MAX_EVENT_SIZE } from "../../src/services/SseParser.js"

/**
 * The SSE parser every stream reads through, against @effect/experimental's (the reference): for any
 * body of data/event/id/retry/comment/unknown lines ended by LF, CRLF or CR, cut into any pieces,
 * the same events in the same order as the reference finds in the whole body at once.
 */

/**
 * The reference fed one line (with its ending) at a time: fed several, it rescans its buffer from
 * the start for each line and takes a CR it passed again for a new one.
 */
const reference = (body: string): ReadonlyArray<Sse.Event> => {
  const events: Array<Sse.Event> = []
  const parser = Sse.makeParser((event) => {
    if (event._tag === "Event") events.push(event)
  })
  for (const line of body.match(/[^\r\n]*(\r\n|\r|\n)|[^\r\n]+$/g) ?? []) parser.feed(line)
  return events
}

const parsed = (pieces: ReadonlyArray<string>): ReadonlyArray<Sse.Event> => {
  const parser = makeSseParser()
  const events: Array<Sse.Event> = []
  for (const piece of pieces) {
    const step = parser.feed(piece)
    assert.isUndefined(step.error)
    events.push(...step.events)
  }
  return events
}

const line = FastCheck.constantFrom(
  "data: {\"a\":1}",
  "data:x",
  "data:  two spaces",
  "data",
  "data:",
  "event: delta",
  "event:",
  "id: 7",
  "id",
  "id: a\u0000b",
  "retry: 100",
  ": keep-alive",
  ":",
  "unknown: field",
  "data: a:b:c",
  "",
  ""
)
const ending = FastCheck.constantFrom("\n", "\n", "\r\n", "\r")

const cut = (body: string, at: ReadonlyArray<number>): ReadonlyArray<string> => {
  const points = [...new Set(at.map((n) => n % (body.length + 1)))].sort((a, b) => a - b)
  const pieces: Array<string> = []
  let from = 0
  for (const point of points) {
    pieces.push(body.slice(from, point))
    from = point
  }
  pieces.push(body.slice(from))
  return pieces
}

describe("SseParser", () => {
  it("finds the reference parser's events in any body, however it is cut", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(FastCheck.tuple(line, ending), { maxLength: 40 }),
        FastCheck.array(FastCheck.nat(2_000), { maxLength: 8 }),
        (lines, at) => {
          const body = lines.map(([text, end]) => text + end).join("")
          assert.deepStrictEqual(parsed(cut(body, at)), reference(body), JSON.stringify(body))
        }
      ),
      { numRuns: 500 }
    )
  })

  it("a thousand events in one piece are found in one pass, in order", () => {
    const body = Array.from({ length: 1_000 }, (_, i) => `data: ${i}\n\n`).join("")
    assert.deepStrictEqual(parsed([body]).map((e) => e.data), Array.from({ length: 1_000 }, (_, i) => String(i)))
  })

  it("a line that never ends is cut off at the size limit", () => {
    const parser = makeSseParser()
    const big = "x".repeat(1024 * 1024)
    let error: string | undefined
    for (let i = 0; i <= MAX_EVENT_SIZE / big.length && error === undefined; i++) error = parser.feed(`data: ${big}`).error
    assert.include(error ?? "", "maximum size")
  })
})
