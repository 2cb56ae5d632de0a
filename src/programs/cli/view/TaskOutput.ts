import { encodeEventJson } from "../../../domain/EventJson.js"
import type { TaskEvent } from "../../../domain/Events.js"
import { initialView, type ViewOptions, type ViewState, viewEvent } from "./EventView.js"
import type { Io } from "../Io.js"
import { makeStyle } from "./Style.js"
import { colorFor } from "./Style.js"

/** One line of `baton run --json`: the event exactly as the domain encodes it. */
export const eventLine = (event: TaskEvent): string => `${encodeEventJson(event)}\n`

export interface TaskPrinter {
  /** Prints a batch of events with one write per stream it touches in a row, not one per event. */
  readonly print: (events: Iterable<TaskEvent>) => void
  /** Closes an open stdout line (text mode on a terminal). */
  readonly finish: () => void
}

/**
 * `baton run`'s output. JSON: every event, one per line, on stdout and nothing else there. Text: the
 * assistant's words on stdout as they stream, everything else on stderr; when both are the same
 * terminal, a note never starts in the middle of a streamed line.
 */
/**
 * `firstFields`: added to the first JSON line (the sandbox in force), so a reader knows how the
 * task's commands ran without a line that is not an event.
 */
export const makeTaskPrinter = (io: Io, json: boolean, options: Partial<ViewOptions> = {}, firstFields?: Readonly<Record<string, unknown>>): TaskPrinter => {
  if (json) {
    let first = firstFields
    return {
      print: (events) => {
        let text = ""
        for (const event of events) {
          const line = eventLine(event)
          text += first === undefined ? line : `${line.slice(0, -2)},${JSON.stringify(first).slice(1)}\n`
          first = undefined
        }
        if (text !== "") io.out(text)
      },
      finish: () => {}
    }
  }
  const view: ViewOptions = {
    style: makeStyle(colorFor({ isTTY: io.stderrTTY }, io.env)),
    userDecisions: true,
    reasoning: false,
    prompts: false,
    ...options
  }
  const textStyle = makeStyle(colorFor({ isTTY: io.stdoutTTY }, io.env))
  const shared = io.stdoutTTY && io.stderrTTY
  let state: ViewState = initialView
  let stdoutOpen = false
  // Text waiting to be written, with its stream: consecutive pieces for one stream go out as one write.
  let pending = ""
  let pendingOut = true
  const write = (out: boolean, text: string) => {
    if (text === "") return
    if (out !== pendingOut && pending !== "") flush()
    pendingOut = out
    pending += text
  }
  const flush = () => {
    if (pending === "") return
    if (pendingOut) io.out(pending)
    else io.err(pending)
    pending = ""
  }
  return {
    print: (events) => {
      for (const event of events) {
        const [next, pieces] = viewEvent(state, event, view)
        state = next
        for (const piece of pieces) {
          if (piece.sink === "text") {
            write(true, piece.text)
            stdoutOpen = !piece.text.endsWith("\n")
          } else if (piece.sink === "note") {
            if (shared && stdoutOpen) {
              write(true, "\n")
              stdoutOpen = false
            }
            write(false, piece.text)
          } else {
            write(false, textStyle.dim(piece.text))
          }
        }
      }
      flush()
    },
    finish: () => {
      if (stdoutOpen) io.out("\n")
      stdoutOpen = false
    }
  }
}
