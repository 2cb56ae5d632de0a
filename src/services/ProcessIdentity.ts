import * as Fs from "node:fs"
import * as Os from "node:os"

/**
 * Processes as /proc shows them: who is alive, which group, and when it started. Shared by the run
 * owners of the backend and the shell reaper of the tools, so both tell a live process from a reused pid.
 */

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

export const hasProc = Fs.existsSync("/proc/self/stat")

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

/**
 * Who owns a run: `host:pid:start`. The start time (from /proc) tells a live owner from a pid that
 * was reused, so start-up closes only runs whose process is really gone — never those of another
 * Baton process working on the same store file right now.
 */
export const currentOwner = (): string => `${Os.hostname()}:${process.pid}:${readProcStat(process.pid)?.startTime ?? "0"}`

export const ownerAlive = (owner: string | undefined): boolean => {
  if (owner === undefined) return false
  const [host, pid, start] = owner.split(":")
  // A run owned on another host cannot be checked from here; leaving it alone never runs anything twice.
  if (host !== Os.hostname()) return true
  const n = Number(pid)
  // Our own pid: a backend opened again in this process takes over what an earlier one left.
  if (!Number.isInteger(n) || n <= 0 || n === process.pid) return false
  return start !== undefined && stillRunning(n, start)
}
