import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import type { Credentials } from "../../services/provider/Credentials.js"
import type { InputEvent, LineEditor } from "./view/LineEditor.js"
import type { LiveView } from "./view/LiveView.js"
import type { Style } from "./view/Style.js"

/**
 * Chat's auth lock: after the model refused the credentials the
 * prompt is locked, naming the model and where the key comes from. It unlocks when the user retries
 * (Enter: the credentials are read again first), by itself when they change (the apiKeyHelper's
 * output is read again every second), or with `/key`, a key typed without echo for this process only.
 */
export type LockOutcome = "retry" | "exit"

export const authLock = (options: {
  readonly model: string
  readonly credentials: Credentials | undefined
  readonly input: Queue.Queue<InputEvent>
  readonly editor: LineEditor
  readonly view: LiveView
  readonly style: Style
  readonly prompt: string
}): Effect.Effect<LockOutcome> =>
  Effect.gen(function*() {
    const { credentials, editor, style, view } = options
    const fix = credentials === undefined
      ? "the server's credentials"
      : `${credentials.source}, or type /key to enter a key for this process`
    yield* view.print(style.red(
      `🔒 locked: ${options.model} refused the credentials. Fix ${fix}; Enter retries, and it unlocks by itself when they change.`
    ))
    editor.setPrompt(`${style.red("🔒")} ${style.dim("Enter retries · /key · /exit")} › `)
    const changed = credentials === undefined ? Effect.never : Stream.runHead(credentials.changes)
    for (;;) {
      const next = yield* Effect.raceFirst(
        Effect.map(Queue.take(options.input), (event) => ({ _tag: "Input" as const, event })),
        Effect.as(changed, { _tag: "Changed" as const })
      )
      if (next._tag === "Changed") {
        yield* view.print(style.green("🔓 the credentials changed: retrying"))
        break
      }
      const event = next.event
      if (event._tag === "Eof") return "exit"
      if (event._tag !== "Line") continue
      const text = event.text.trim()
      if (text === "/exit" || text === "/quit") return "exit"
      if (text === "/key" && credentials !== undefined) {
        editor.setSecret(true)
        editor.setPrompt(`${style.yellow("key")} ${style.dim("(not shown, kept for this process only)")} › `)
        const typed = yield* Queue.take(options.input).pipe(Effect.ensuring(Effect.sync(() => editor.setSecret(false))))
        if (typed._tag === "Line" && typed.text.trim() !== "") {
          yield* credentials.set(Redacted.make(typed.text.trim()))
          yield* view.print(style.green("🔓 key set for this process: retrying"))
          break
        }
        editor.setPrompt(`${style.red("🔒")} ${style.dim("Enter retries · /key · /exit")} › `)
        continue
      }
      if (text === "") {
        if (credentials !== undefined) yield* credentials.refresh
        yield* view.print(style.dim("retrying…"))
        break
      }
      yield* view.print(style.dim("locked until the credentials are fixed: Enter retries · /key · /exit"))
    }
    editor.setPrompt(options.prompt)
    return "retry"
  })
