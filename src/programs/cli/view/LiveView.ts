import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type { TaskEvent } from "../../../domain/Events.js"
import type { Origin } from "../../../domain/Messages.js"
import { callHeader } from "../../../domain/CallPreview.js"
import { initialView, type ViewOptions, type ViewState, viewEvent } from "./EventView.js"
import { describePhase, initialPhase, type Phase, stepPhase, tokenText } from "./Phase.js"
import type { Screen } from "./Screen.js"

/**
 * A task as it happens, on a Screen: the event view above, and under it a status line with a spinner,
 * what the task is doing, how long it has run and the tokens so far. Shared by `chat` and `demo`.
 */
/** Which shown call an approval waits for: a subagent's call ids are its own conversation's, so they may repeat the parent's. */
export const shownKey = (toolCallId: string, origin: Origin | undefined): string =>
  origin === undefined ? toolCallId : `${origin.tool_call_id}/${toolCallId}`

export interface LiveView {
  readonly show: (event: TaskEvent) => Effect.Effect<void>
  /** Whole lines of output, on a fresh line; `callId` when they are about that call. */
  readonly print: (text: string, callId?: string) => Effect.Effect<void>
  /** Resolves once the call's line is on screen, so an approval question always comes after it. */
  readonly awaitShown: (toolCallId: string) => Effect.Effect<void>
  /** "Tool subject: " when other lines came after the call's own line, else "". */
  readonly callLabel: (toolCallId: string) => string
  /** The status line for one task (animated on a terminal) until the scope closes. */
  readonly during: Effect.Effect<void, never, Scope.Scope>
  /** Replaces the status words while a person is being asked something. */
  readonly setAsking: (text: string | undefined) => Effect.Effect<void>
}

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

export const makeLiveView = (screen: Screen, options: ViewOptions, hint: string): LiveView => {
  const { style } = options
  let view: ViewState = initialView
  let phase: Phase = initialPhase
  let startedAt: number | undefined
  let asking: string | undefined
  const shown = new Map<string, Deferred.Deferred<void>>()
  const shownLatch = (id: string) => {
    const existing = shown.get(id)
    if (existing !== undefined) return existing
    const created = Deferred.unsafeMake<void>(FiberId.none)
    shown.set(id, created)
    return created
  }

  const paint = () => {
    if (startedAt === undefined) return screen.setStatus(undefined)
    const now = Date.now()
    const seconds = Math.floor((now - startedAt) / 1000)
    const frame = SPINNER[Math.floor(now / 100) % SPINNER.length]!
    const tokens = tokenText(phase)
    const words = asking ?? describePhase(phase, now)
    screen.setStatus(
      `${style.cyan(asking !== undefined ? "?" : frame)} ${words}${style.dim(` · ${seconds}s${tokens !== "" ? ` · ${tokens}` : ""} · ${hint}`)}`
    )
  }

  return {
    show: (event) =>
      Effect.sync(() => {
        const [next, pieces] = viewEvent(view, event, options)
        view = next
        phase = stepPhase(phase, event, Date.now())
        for (const piece of pieces) {
          if (piece.sink === "note") screen.newline()
          screen.write(piece.sink === "reasoning" ? style.dim(style.italic(piece.text)) : piece.text)
        }
        paint()
      }).pipe(Effect.zipRight(
        event.type === "tool_call" ? Effect.asVoid(Deferred.succeed(shownLatch(shownKey(event.tool_call_id, event.origin)), undefined)) : Effect.void
      )),
    print: (text, callId) =>
      Effect.sync(() => {
        if (callId !== undefined) view = { ...view, lastCall: callId }
        screen.newline()
        screen.write(text.endsWith("\n") ? text : `${text}\n`)
      }),
    awaitShown: (id) => Deferred.await(shownLatch(id)),
    callLabel: (id) => {
      const call = view.calls.get(id)
      if (call === undefined || view.lastCall === id) return ""
      const header = callHeader(call)
      return `${header.tool} ${header.subject}: `
    },
    during: Effect.acquireRelease(
      Effect.sync(() => {
        view = { ...initialView, calls: view.calls }
        phase = initialPhase
        startedAt = Date.now()
        paint()
      }),
      () =>
        Effect.sync(() => {
          startedAt = undefined
          asking = undefined
          shown.clear()
          screen.newline()
          paint()
        })
    ).pipe(
      Effect.zipRight(
        screen.tty ? Effect.forkScoped(Effect.repeat(Effect.sync(paint), Schedule.spaced("100 millis"))) : Effect.void
      ),
      Effect.asVoid
    ),
    setAsking: (text) =>
      Effect.sync(() => {
        asking = text
        paint()
      })
  }
}
