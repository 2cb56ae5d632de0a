import * as Readline from "node:readline"
import type { Screen } from "./Screen.js"

/** What the person at the keyboard did. */
export type InputEvent =
  | { readonly _tag: "Line"; readonly text: string }
  /** Ctrl-C; `hadText` when it only cleared a half-typed line. */
  | { readonly _tag: "Interrupt"; readonly hadText: boolean }
  | { readonly _tag: "Escape" }
  /** Ctrl-D on an empty line, or the end of piped input. */
  | { readonly _tag: "Eof" }

export interface LineEditor {
  readonly setPrompt: (prompt: string) => void
  /** Puts aside what is typed (an approval question is being asked) and gives it back afterwards. */
  readonly stash: () => void
  readonly unstash: () => void
  /** Secret entry (`/key`): what is typed shows as dots and stays out of the history. */
  readonly setSecret: (on: boolean) => void
  readonly stop: () => void
}

interface Key {
  readonly name?: string
  readonly ctrl?: boolean
  readonly meta?: boolean
  readonly sequence?: string
}

/**
 * A one-line editor drawn in the screen's input line: typing, ←/→, Home/End, Ctrl-A/E/U/K/W,
 * ↑/↓ history. Raw mode turns Ctrl-C into a key, so interrupting a task never kills the process.
 * Piped input is read line by line instead, with no editing and no echo.
 */
export const startLineEditor = (
  stdin: NodeJS.ReadStream,
  screen: Screen,
  emit: (event: InputEvent) => void
): LineEditor => {
  if (stdin.isTTY !== true) {
    const rl = Readline.createInterface({ input: stdin, terminal: false })
    rl.on("line", (text) => emit({ _tag: "Line", text }))
    rl.on("close", () => emit({ _tag: "Eof" }))
    return { setPrompt: () => {}, stash: () => {}, unstash: () => {}, setSecret: () => {}, stop: () => rl.close() }
  }

  let prompt = ""
  let text = ""
  let cursor = 0
  let stashed: { text: string; cursor: number } | undefined
  const history: Array<string> = []
  let historyAt = 0
  let secret = false

  const render = () => screen.setInput({ prompt, text: secret ? "•".repeat(text.length) : text, cursor })
  const set = (next: string, at = next.length) => {
    text = next
    cursor = Math.max(0, Math.min(at, next.length))
    render()
  }

  const onKey = (str: string | undefined, key: Key | undefined) => {
    const name = key?.name
    if (key?.ctrl === true) {
      switch (name) {
        case "c": {
          const hadText = text !== ""
          set("")
          emit({ _tag: "Interrupt", hadText })
          return
        }
        case "d":
          if (text === "") emit({ _tag: "Eof" })
          else set(text.slice(0, cursor) + text.slice(cursor + 1), cursor)
          return
        case "a":
          return set(text, 0)
        case "e":
          return set(text, text.length)
        case "u":
          return set(text.slice(cursor), 0)
        case "k":
          return set(text.slice(0, cursor), cursor)
        case "w": {
          const head = text.slice(0, cursor).replace(/\S+\s*$/, "")
          return set(head + text.slice(cursor), head.length)
        }
        default:
          return
      }
    }
    switch (name) {
      case "return":
      case "enter": {
        const line = text
        if (line.trim() !== "" && !secret) history.push(line)
        historyAt = history.length
        set("")
        emit({ _tag: "Line", text: line })
        return
      }
      case "escape":
        emit({ _tag: "Escape" })
        return
      case "backspace":
        if (cursor > 0) set(text.slice(0, cursor - 1) + text.slice(cursor), cursor - 1)
        return
      case "delete":
        return set(text.slice(0, cursor) + text.slice(cursor + 1), cursor)
      case "left":
        return set(text, cursor - 1)
      case "right":
        return set(text, cursor + 1)
      case "home":
        return set(text, 0)
      case "end":
        return set(text, text.length)
      case "up":
        if (historyAt > 0) set(history[--historyAt]!)
        return
      case "down":
        if (historyAt < history.length) {
          historyAt++
          set(history[historyAt] ?? "")
        }
        return
      default:
        break
    }
    if (str !== undefined && key?.meta !== true && !/[\x00-\x1f\x7f]/.test(str)) {
      set(text.slice(0, cursor) + str + text.slice(cursor), cursor + str.length)
    }
  }

  Readline.emitKeypressEvents(stdin)
  stdin.setRawMode(true)
  stdin.on("keypress", onKey)
  stdin.resume()
  render()

  return {
    setPrompt: (next) => {
      prompt = next
      render()
    },
    stash: () => {
      stashed = { text, cursor }
      set("")
    },
    setSecret: (on) => {
      secret = on
      render()
    },
    unstash: () => {
      if (stashed !== undefined) set(stashed.text, stashed.cursor)
      stashed = undefined
    },
    stop: () => {
      stdin.off("keypress", onKey)
      stdin.setRawMode(false)
      stdin.pause()
      screen.setInput(undefined)
    }
  }
}
