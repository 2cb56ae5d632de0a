import { Effect, Option, Stream, SubscriptionRef } from "effect"

/** One numbered entry of a conversation's live log: a task event, or a change of the host's state. */
export interface Entry {
  readonly id: number
  readonly kind: "event" | "state"
  /** The JSON text the page receives. */
  readonly data: string
  /** A wait that counts down from when it was announced (a reconnect's retry_in_ms): its append time. */
  readonly waitSince?: number
}

/** What a follower gets: entries in id order, or `reset` when what it asked for is no longer kept. */
export type Followed = { readonly _tag: "Entry"; readonly entry: Entry } | { readonly _tag: "Reset" }

export interface TaskLog {
  readonly append: (items: ReadonlyArray<Omit<Entry, "id" | "waitSince"> & { readonly wait?: boolean }>) => Effect.Effect<void>
  /** Forgets what came before now (a new task starts; the old one is in the history). Returns the last id. */
  readonly trim: Effect.Effect<number>
  /** The last id given out (0 before any). */
  readonly last: Effect.Effect<number>
  /** Entries with id > after, then the live ones as they come; never ends by itself. */
  readonly follow: (after: number) => Stream.Stream<Followed>
}

/**
 * The live log of one conversation hosted by `baton web`: what the page replays on a reconnect
 * (`Last-Event-ID`) and what every tab follows. Entries live in one array appended in place (a task
 * streams thousands of deltas: no copy per entry); a SubscriptionRef of the last id wakes followers,
 * who read what is new from the array, so a follower that falls behind skips nothing.
 */
export const make = Effect.fn("TaskLog.make")(function*() {
  const entries: Array<Entry> = []
  let base = 1
  const lastId = yield* SubscriptionRef.make(0)

  const append: TaskLog["append"] = (items) =>
    items.length === 0 ? Effect.void : SubscriptionRef.modify(lastId, (last) => {
      let id = last
      for (const item of items) {
        entries.push({ id: ++id, kind: item.kind, data: item.data, ...(item.wait === true ? { waitSince: Date.now() } : {}) })
      }
      return [undefined, id]
    })

  const trim = SubscriptionRef.get(lastId).pipe(Effect.tap((last) =>
    Effect.sync(() => {
      entries.splice(0, entries.length)
      base = last + 1
    })
  ))

  const follow: TaskLog["follow"] = (after) =>
    Stream.suspend(() => {
      let sent = after
      return lastId.changes.pipe(
        Stream.mapConcat((last): ReadonlyArray<Followed> => {
          if (sent > last) {
            // An id this log never gave (another process's): start again from what is kept.
            sent = last
            return [{ _tag: "Reset" }]
          }
          if (sent + 1 < base) {
            sent = last
            return [{ _tag: "Reset" }]
          }
          const fresh = entries.slice(sent + 1 - base, last + 1 - base)
          sent = last
          return fresh.map((entry) => ({ _tag: "Entry", entry }))
        })
      )
    })

  return { append, trim, last: SubscriptionRef.get(lastId), follow } satisfies TaskLog
})

/** The id at which a page that saw `lastEventId` goes on, when that id was this log's (`<epoch>:<n>`). */
export const resumeAfter = (epoch: string, lastEventId: string | undefined): Option.Option<number> => {
  const match = /^([^:]+):(\d+)$/.exec(lastEventId ?? "")
  return match !== null && match[1] === epoch ? Option.some(Number(match[2])) : Option.none()
}
