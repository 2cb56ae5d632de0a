// A command's output as a terminal shows it: SGR colour codes (30–37, 90–97, bold, dim, reset)
// become spans with classes; every other escape sequence is dropped. Text stays text nodes.
import { el } from "./dom.js"

// CSI sequences (colours, cursor moves), OSC titles and lone escapes.
const ESCAPE = /\x1b\[([0-9;?]*)([A-Za-z])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]/g

const classesOf = (state) =>
  [state.fg !== undefined ? `ansi-${state.fg}` : "", state.bold ? "ansi-bold" : "", state.dim ? "ansi-dim" : ""].filter(Boolean).join(" ")

const apply = (state, params) => {
  const codes = params === "" ? [0] : params.split(";").map(Number)
  for (let i = 0; i < codes.length; i++) {
    const code = codes[i]
    if (code === 0) Object.assign(state, { fg: undefined, bold: false, dim: false })
    else if (code === 1) state.bold = true
    else if (code === 2) state.dim = true
    else if (code === 22) Object.assign(state, { bold: false, dim: false })
    else if (code === 39) state.fg = undefined
    else if (code >= 30 && code <= 37) state.fg = code - 30
    else if (code >= 90 && code <= 97) state.fg = code - 90 + 8
    // 256-colour and RGB forms: skip their arguments, keep the default colour.
    else if (code === 38) i += codes[i + 1] === 5 ? 2 : 4
  }
}

/** `text` with ANSI codes as a list of nodes (plain text nodes and coloured spans). */
export const ansiNodes = (text) => {
  const nodes = []
  const state = { fg: undefined, bold: false, dim: false }
  let at = 0
  const push = (part) => {
    if (part === "") return
    const cls = classesOf(state)
    nodes.push(cls === "" ? document.createTextNode(part) : el("span", { class: cls }, part))
  }
  for (const match of text.matchAll(ESCAPE)) {
    push(text.slice(at, match.index))
    if (match[2] === "m") apply(state, match[1])
    at = match.index + match[0].length
  }
  push(text.slice(at))
  return nodes
}
