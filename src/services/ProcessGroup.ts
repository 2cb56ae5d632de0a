import { Duration, Effect, Option } from "effect"
import * as Fs from "node:fs"
import { hasProc, isAlive, readProcStat } from "./ProcessIdentity.js"

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

/** `target` is a pid, or minus a pgid for the whole group. */
const sendSignal = (target: number, signal: NodeJS.Signals) =>
  Effect.sync(() => {
    try {
      process.kill(target, signal)
    } catch {
      // ESRCH: already gone.
    }
  })

const POLL = Duration.millis(20)

const awaitNone = (alive: () => boolean): Effect.Effect<void> =>
  Effect.suspend(() => (alive() ? Effect.zipRight(Effect.sleep(POLL), awaitNone(alive)) : Effect.void))

/**
 * SIGTERM, then SIGKILL to whatever is left after the grace period. Runs inside finalizers, which
 * are uninterruptible: without `Effect.interruptible` the timeout could never fire.
 */
const terminate = (target: number, alive: () => boolean, grace: Duration.DurationInput) =>
  Effect.gen(function*() {
    if (!alive()) return
    yield* sendSignal(target, "SIGTERM")
    const gone = yield* Effect.interruptible(awaitNone(alive)).pipe(Effect.timeoutOption(grace))
    if (Option.isNone(gone)) {
      yield* sendSignal(target, "SIGKILL")
      yield* Effect.interruptible(awaitNone(alive)).pipe(Effect.timeoutOption("2 seconds"))
    }
  })

/** The whole group: every process the command started. */
export const killGroup = (pgid: number, grace: Duration.DurationInput) => terminate(-pgid, () => liveMembers(pgid).length > 0, grace)

/** One process (a marked shell that left its group). */
export const killProcess = (pid: number, grace: Duration.DurationInput) => terminate(pid, () => isAlive(pid), grace)
