import { Duration, Effect, Option } from "effect"
import * as Fs from "node:fs"
import { hasProc, readProcStat } from "./ProcessIdentity.js"

/**
 * Live (non-zombie) members of a process group. Zombies are skipped: `kill(-pgid, 0)` still counts
 * them, and orphaned zombies linger where PID 1 does not reap (a container without an init).
 */
export const liveMembers = (pgid: number): ReadonlyArray<number> => {
  if (!hasProc) {
    try {
      process.kill(-pgid, 0)
      return [pgid]
    } catch {
      return []
    }
  }
  const members: Array<number> = []
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const stat = readProcStat(entry)
    if (stat !== undefined && stat.pgrp === pgid && stat.state !== "Z" && stat.state !== "X") members.push(Number(entry))
  }
  return members
}

export const signalGroup = (pgid: number, signal: NodeJS.Signals) =>
  Effect.sync(() => {
    try {
      process.kill(-pgid, signal)
    } catch {
      // ESRCH: the group is already gone.
    }
  })

const POLL = Duration.millis(20)

const awaitGone = (pgid: number): Effect.Effect<void> =>
  Effect.suspend(() => (liveMembers(pgid).length === 0 ? Effect.void : Effect.zipRight(Effect.sleep(POLL), awaitGone(pgid))))

/**
 * SIGTERM to the whole group, SIGKILL to whatever is left after the grace period. Runs inside
 * finalizers, which are uninterruptible: without `Effect.interruptible` the timeout could never
 * fire (research/effect3-recipes.md §2).
 */
export const killGroup = (pgid: number, grace: Duration.DurationInput) =>
  Effect.gen(function*() {
    if (liveMembers(pgid).length === 0) return
    yield* signalGroup(pgid, "SIGTERM")
    const gone = yield* Effect.interruptible(awaitGone(pgid)).pipe(Effect.timeoutOption(grace))
    if (Option.isNone(gone)) {
      yield* signalGroup(pgid, "SIGKILL")
      yield* Effect.interruptible(awaitGone(pgid)).pipe(Effect.timeoutOption("2 seconds"))
    }
  })
