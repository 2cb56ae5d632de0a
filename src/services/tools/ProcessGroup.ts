import { Duration, Effect, Option } from "effect"
import * as Fs from "node:fs"

export interface ProcStat {
  readonly state: string
  readonly pgrp: number
  /** Clock ticks after boot; with the pid it identifies one process across pid reuse. */
  readonly startTime: string
}

/** Parses /proc/<pid>/stat; the command name may contain spaces and parentheses, so split after the last `)`. */
export const readProcStat = (pid: number | string): ProcStat | undefined => {
  try {
    const text = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
    return { state: fields[0] ?? "", pgrp: Number(fields[2]), startTime: fields[19] ?? "" }
  } catch {
    return undefined
  }
}

const hasProc = Fs.existsSync("/proc/self/stat")

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

/** Whether one process is alive (not a zombie). */
export const isAlive = (pid: number): boolean => {
  if (!hasProc) {
    try {
      process.kill(pid, 0)
      return true
    } catch {
      return false
    }
  }
  const stat = readProcStat(pid)
  return stat !== undefined && stat.state !== "Z" && stat.state !== "X"
}

/** The same process still runs: alive, and started when it was recorded (pids get reused). */
export const stillRunning = (pid: number, startTime: string): boolean =>
  isAlive(pid) && readProcStat(pid)?.startTime === startTime

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
