import * as Os from "node:os"
import { readProcStat, stillRunning } from "./tools/ProcessGroup.js"

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
