/**
 * ANSI styling for the terminal renderers. Colour is a property of the sink (a TTY without NO_COLOR),
 * never of the text: with `color: false` every function returns its input unchanged, so output that
 * goes to a file or a pipe carries no escape codes.
 */
export interface Style {
  readonly color: boolean
  readonly bold: (text: string) => string
  readonly dim: (text: string) => string
  readonly italic: (text: string) => string
  readonly red: (text: string) => string
  readonly green: (text: string) => string
  readonly yellow: (text: string) => string
  readonly blue: (text: string) => string
  readonly magenta: (text: string) => string
  readonly cyan: (text: string) => string
}

const sgr = (open: number, close: number) => (text: string) => text === "" ? text : `\x1b[${open}m${text}\x1b[${close}m`
const plain = (text: string) => text

export const makeStyle = (color: boolean): Style => ({
  color,
  bold: color ? sgr(1, 22) : plain,
  dim: color ? sgr(2, 22) : plain,
  italic: color ? sgr(3, 23) : plain,
  red: color ? sgr(31, 39) : plain,
  green: color ? sgr(32, 39) : plain,
  yellow: color ? sgr(33, 39) : plain,
  blue: color ? sgr(34, 39) : plain,
  magenta: color ? sgr(35, 39) : plain,
  cyan: color ? sgr(36, 39) : plain
})

/** Colour for a stream: only a terminal, and never when NO_COLOR is set (https://no-color.org). */
export const colorFor = (stream: { readonly isTTY?: boolean }, env: Record<string, string | undefined>): boolean =>
  stream.isTTY === true && (env["NO_COLOR"] ?? "") === "" && env["TERM"] !== "dumb"

const ANSI = /\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07/g

export const stripAnsi = (text: string): string => text.replace(ANSI, "")

/** Columns a code point takes in a terminal: 0 for combining marks, 2 for wide East Asian and emoji. */
const codePointWidth = (cp: number): number => {
  if (cp < 32 || (cp >= 0x7f && cp < 0xa0)) return 0
  if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0xfe00 && cp <= 0xfe0f)) return 0
  if (
    (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) || (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1faff) || (cp >= 0x20000 && cp <= 0x3fffd)
  ) return 2
  return 1
}

/** Terminal columns of a line (escape codes excluded). */
export const visibleWidth = (text: string): number => {
  let width = 0
  for (const ch of stripAnsi(text)) width += codePointWidth(ch.codePointAt(0)!)
  return width
}

/** The longest prefix of `text` (escape codes excluded) that fits in `columns`, marked with `…` when cut. */
export const truncateToWidth = (text: string, columns: number): string => {
  const plainText = stripAnsi(text)
  if (visibleWidth(plainText) <= columns) return text
  let width = 0
  let out = ""
  for (const ch of plainText) {
    const w = codePointWidth(ch.codePointAt(0)!)
    if (width + w > columns - 1) break
    out += ch
    width += w
  }
  return `${out}…`
}
