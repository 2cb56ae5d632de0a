import * as Schema from "effect/Schema"
import { TaskEvent } from "../../../domain/Events.js"
import { initialView, type ViewOptions, type ViewState, viewEvent } from "./EventView.js"
import type { Io } from "../Io.js"
import { makeStyle } from "./Style.js"
import { colorFor } from "./Style.js"

const encode = Schema.encodeSync(TaskEvent)

/** One line of `baton run --json`: the event exactly as the domain encodes it. */
export const eventLine = (event: TaskEvent): string => `${JSON.stringify(encode(event))}\n`

export interface TaskPrinter {
  readonly print: (event: TaskEvent) => void
  /** Closes an open stdout line (text mode on a terminal). */
  readonly finish: () => void
}

/**
 * `baton run`'s output. JSON: every event, one per line, on stdout and nothing else there. Text: the
 * assistant's words on stdout as they stream, everything else on stderr; when both are the same
 * terminal, a note never starts in the middle of a streamed line.
 */
export const makeTaskPrinter = (io: Io, json: boolean, options: Partial<ViewOptions> = {}): TaskPrinter => {
  if (json) return { print: (event) => io.out(eventLine(event)), finish: () => {} }
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
  return {
    print: (event) => {
      const [next, pieces] = viewEvent(state, event, view)
      state = next
      for (const piece of pieces) {
        if (piece.sink === "text") {
          io.out(piece.text)
          stdoutOpen = !piece.text.endsWith("\n")
        } else if (piece.sink === "note") {
          if (shared && stdoutOpen) {
            io.out("\n")
            stdoutOpen = false
          }
          io.err(piece.text)
        } else {
          io.err(textStyle.dim(piece.text))
        }
      }
    },
    finish: () => {
      if (stdoutOpen) io.out("\n")
      stdoutOpen = false
    }
  }
}
