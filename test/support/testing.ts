import { Chunk as EChunk, Effect, Stream, TestClock } from "effect"
import type { TaskEvent } from "../../src/domain/Events.js"
import { Otid } from "../../src/domain/Ids.js"
import type { InputMessage, ToolReturn, UserMessage } from "../../src/domain/Messages.js"

let counter = 0
export const otid = (label = "o"): Otid => Otid.make(`${label}-${++counter}-${Math.random().toString(36).slice(2, 8)}`)

export const user = (content: string, id: Otid = otid("u")): UserMessage => ({ type: "user_message", content, otid: id })

export const toolResult = (tool_call_id: string, content = "ok", status: ToolReturn["status"] = "success"): ToolReturn => ({
  type: "tool_return",
  tool_call_id: tool_call_id as ToolReturn["tool_call_id"],
  status,
  content,
  otid: otid("r")
})

export const input = (...messages: ReadonlyArray<InputMessage>) => ({ messages })

export const collect = <A, E, R>(stream: Stream.Stream<A, E, R>) => Effect.map(Stream.runCollect(stream), EChunk.toReadonlyArray)

export const types = (events: ReadonlyArray<TaskEvent>) => events.map((e) => e.type)

/** Polls before the first real-time pause: enough for everything an in-process store does at once. */
const QUICK = 100

/**
 * The pause between two looks at a condition: a yield at first, then one millisecond of real time
 * (a timer, never the Clock, which a test may hold still), so that I/O on the way (a PostgreSQL
 * reply, a child's output) arrives without a busy loop starving the processes it waits for.
 */
const pause = (attempt: number) =>
  attempt < QUICK
    ? Effect.yieldNow()
    : Effect.async<void>((resume) => {
      const handle = setTimeout(() => resume(Effect.void), 1)
      return Effect.sync(() => clearTimeout(handle))
    })

/** The test clock's pending sleeps become visible only once a fiber has started sleeping; wait for that, never for the Clock. */
export const awaitSleeps = (count = 1, tries = QUICK + 10_000) =>
  Effect.gen(function*() {
    for (let i = 0; i < tries; i++) {
      if ((yield* TestClock.sleeps()).length >= count) return
      yield* pause(i)
    }
    return yield* Effect.dieMessage(`no fiber started sleeping (wanted ${count})`)
  })

/** Waits until `check` holds (by yielding, then polling for about 10 s of real time; never by the Clock). */
export const eventually = <E, R>(check: Effect.Effect<boolean, E, R>, what: string, tries = QUICK + 10_000) =>
  Effect.gen(function*() {
    for (let i = 0; i < tries; i++) {
      if (yield* check) return
      yield* pause(i)
    }
    return yield* Effect.dieMessage(`never happened: ${what}`)
  })
