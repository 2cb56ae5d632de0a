import type * as Sse from "@effect/experimental/Sse"

/**
 * A `text/event-stream` parser that reads each character once: lines end at LF, CRLF or CR (also a
 * CRLF cut between two reads), a line's first colon splits field from value (one leading space
 * dropped), `data` lines join with LF, and a blank line dispatches an event that has data. `event`
 * names the event ("message" when absent) and is forgotten at every blank line; `id` (unless it
 * contains NUL) names the next event dispatched; `retry`, comments and unknown fields carry nothing for a one-shot stream. Events
 * are the same objects @effect/experimental's parser dispatches; that parser rescans its buffer
 * from the start for every line of one feed (quadratic in a read of many events) and costs several
 * string copies a line, which this one does not.
 */
export interface SseParser {
  /** Parses `text` (the next decoded piece of the body); answers the events it completed, or why it cannot go on. */
  readonly feed: (text: string) => { readonly events: ReadonlyArray<Sse.Event>; readonly error?: string }
}

/** The largest event (its pending line and data) a stream may build: a peer that never ends a line is cut off here. */
export const MAX_EVENT_SIZE = 10 * 1024 * 1024

const LF = 10
const CR = 13
const SPACE = 32

export const makeSseParser = (): SseParser => {
  // The unfinished last line of the previous piece, and whether that piece ended in CR (a LF that
  // starts the next one ends no line of its own).
  let pending = ""
  let skipLf = false
  let data: string | undefined
  let eventName: string | undefined
  let eventId: string | undefined

  const field = (text: string, from: number, to: number, out: Array<Sse.Event>) => {
    if (from === to) {
      if (data !== undefined) {
        out.push({ _tag: "Event", id: eventId, event: eventName ?? "message", data })
        data = undefined
        eventId = undefined
      }
      eventName = undefined
      return
    }
    const colon = text.indexOf(":", from)
    const nameEnd = colon < 0 || colon > to ? to : colon
    let valueFrom = nameEnd === to ? to : nameEnd + 1
    if (valueFrom < to && text.charCodeAt(valueFrom) === SPACE) valueFrom++
    const length = nameEnd - from
    if (length === 4 && text.startsWith("data", from)) {
      const value = text.slice(valueFrom, to)
      data = data === undefined ? value : `${data}\n${value}`
    } else if (length === 5 && text.startsWith("event", from)) {
      eventName = text.slice(valueFrom, to)
    } else if (length === 2 && text.startsWith("id", from)) {
      const value = text.slice(valueFrom, to)
      if (!value.includes("\u0000")) eventId = value
    }
  }

  return {
    feed: (piece) => {
      const text = pending === "" ? piece : pending + piece
      const out: Array<Sse.Event> = []
      let at = 0
      if (skipLf && text.charCodeAt(0) === LF) at = 1
      skipLf = false
      // Where the next CR is, looked up again only once passed: a body without CR is scanned for one once.
      let cr = text.indexOf("\r", at)
      for (;;) {
        if (cr >= 0 && cr < at) cr = text.indexOf("\r", at)
        const lf = text.indexOf("\n", at)
        const end = lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr)
        if (end < 0) break
        field(text, at, end, out)
        if (text.charCodeAt(end) === CR) {
          if (end + 1 === text.length) skipLf = true
          at = text.charCodeAt(end + 1) === LF ? end + 2 : end + 1
        } else {
          at = end + 1
        }
      }
      pending = at === 0 ? text : text.slice(at)
      if (pending.length + (data?.length ?? 0) > MAX_EVENT_SIZE) {
        pending = ""
        data = undefined
        eventName = undefined
        return { events: out, error: `Pending SSE event exceeded the maximum size of ${MAX_EVENT_SIZE}` }
      }
      return { events: out }
    }
  }
}
