import { truncateToWidth, visibleWidth } from "./Style.js"

/**
 * A terminal with a live region at the bottom: a status line and an input line stay under the
 * output, which scrolls above them. Every write erases the region, prints, and redraws it, in one
 * `write` call so the terminal never shows a half-drawn frame. On anything but a terminal the region
 * is never drawn and output passes through unchanged.
 */
export interface Screen {
  readonly tty: boolean
  /** Permanent output (may end mid-line; the next write continues it). */
  readonly write: (text: string) => void
  /** Ends the current output line if one is open. */
  readonly newline: () => void
  readonly setStatus: (line: string | undefined) => void
  readonly setInput: (input: { readonly prompt: string; readonly text: string; readonly cursor: number } | undefined) => void
  /** Erases the live region and leaves the cursor on a fresh line. */
  readonly close: () => void
}

export interface TerminalOut {
  readonly write: (data: string) => void
  readonly columns: () => number
}

const ESC = "\x1b["

export const makeScreen = (out: TerminalOut, tty: boolean): Screen => {
  let partialWidth = 0
  let regionRows = 0
  let status: string | undefined
  let input: { readonly prompt: string; readonly text: string; readonly cursor: number } | undefined

  const columns = () => Math.max(20, out.columns())

  const erase = (): string => {
    if (regionRows === 0) return ""
    let seq = "\r"
    if (regionRows > 1) seq += `${ESC}${regionRows - 1}A`
    seq += `${ESC}J`
    const cols = columns()
    if (partialWidth > 0 && partialWidth % cols !== 0) seq += `${ESC}1A${ESC}${(partialWidth % cols) + 1}G`
    regionRows = 0
    return seq
  }

  /** The input line scrolls sideways so it always fits on one row, cursor in view. */
  const inputRow = (cols: number): { readonly text: string; readonly cursorCol: number } => {
    const i = input!
    const room = cols - 1 - visibleWidth(i.prompt)
    const before = [...i.text.slice(0, i.cursor)]
    const after = [...i.text.slice(i.cursor)]
    let shownBefore = before
    while (shownBefore.length > 0 && visibleWidth(shownBefore.join("")) > room - 1) shownBefore = shownBefore.slice(1)
    let shownAfter = after
    while (shownAfter.length > 0 && visibleWidth(shownBefore.join("") + shownAfter.join("")) > room) shownAfter = shownAfter.slice(0, -1)
    const left = shownBefore.join("")
    return { text: i.prompt + left + shownAfter.join(""), cursorCol: visibleWidth(i.prompt + left) }
  }

  const draw = (): string => {
    if (!tty || (status === undefined && input === undefined)) return ""
    const cols = columns()
    const rows: Array<string> = []
    if (status !== undefined) rows.push(truncateToWidth(status.replace(/\n/g, " "), cols - 1))
    // A line that filled its last row has already wrapped: the region starts where it would continue.
    let seq = partialWidth % cols !== 0 ? "\n" : ""
    if (input !== undefined) {
      const row = inputRow(cols)
      rows.push(row.text)
      seq += rows.join("\n")
      const back = visibleWidth(row.text) - row.cursorCol
      seq += (back > 0 ? `${ESC}${back}D` : "") + `${ESC}?25h`
    } else {
      seq += `${rows.join("\n")}${ESC}?25l`
    }
    regionRows = rows.length
    return seq
  }

  const normalize = (text: string) => text.replace(/\r\n/g, "\n").replace(/\r/g, "").replace(/\t/g, "    ")

  const advance = (text: string) => {
    const lastBreak = text.lastIndexOf("\n")
    partialWidth = lastBreak === -1 ? partialWidth + visibleWidth(text) : visibleWidth(text.slice(lastBreak + 1))
  }

  const repaint = (text: string) => {
    if (!tty) {
      if (text !== "") out.write(text)
      advance(text)
      return
    }
    const clean = normalize(text)
    const head = erase()
    advance(clean)
    out.write(head + clean + draw())
  }

  return {
    tty,
    write: (text) => repaint(text),
    newline: () => {
      if (partialWidth > 0) repaint("\n")
    },
    setStatus: (line) => {
      if (line === status) return
      status = line
      if (tty) repaint("")
    },
    setInput: (next) => {
      input = next
      if (tty) repaint("")
    },
    close: () => {
      status = undefined
      input = undefined
      if (tty) out.write(`${erase()}${partialWidth > 0 ? "\n" : ""}${ESC}?25h`)
      else if (partialWidth > 0) out.write("\n")
      partialWidth = 0
    }
  }
}
