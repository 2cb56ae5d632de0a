import { Duration, Effect, Either, Schema } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { hasProc, readProcStat, stillRunning } from "./ProcessIdentity.js"
import { killGroup, killProcess, liveMembers } from "./ProcessGroup.js"

/** Lets the process groups a crashed process left running be found and killed later. */
export interface ProcessTracker {
  /** Environment added to every spawned process so a reaper can recognise it as ours. */
  readonly env: Readonly<Record<string, string>>
  /** Records a live process group; `unregister` runs once the group is gone. */
  readonly register: (pgid: number) => Effect.Effect<void>
  readonly unregister: (pgid: number) => Effect.Effect<void>
}

export const noProcessTracking: ProcessTracker = { env: {}, register: () => Effect.void, unregister: () => Effect.void }

/**
 * A process group Baton started (a shell tool, an MCP server), recorded on disk while it runs. A detached group outlives
 * a SIGKILLed parent; the record lets the next start find and kill it.
 */
const ProcessRecord = Schema.Struct({
  pgid: Schema.Int,
  owner: Schema.Struct({ pid: Schema.Int, startTime: Schema.String })
})
type ProcessRecord = typeof ProcessRecord.Type

/** The shells' marker; each registry names its own, so one reaper never reports another's processes. */
export const OWNER_ENV = "BATON_TOOL_OWNER"

const ownerMarker = (variable: string, owner: ProcessRecord["owner"]) => `${variable}=${owner.pid}:${owner.startTime}`

/** The variable naming a process's registry: the sweep for unrecorded orphans stays within its own home. */
export const registryVariable = (variable: string) => `${variable}_REGISTRY`

const environOf = (pid: number): ReadonlyArray<string> => {
  try {
    return Fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")
  } catch {
    return []
  }
}

const markerOf = (variable: string, pid: number): string | undefined =>
  environOf(pid).find((entry) => entry.startsWith(`${variable}=`))

/** Members of the group that carry the owner's marker, so a reused pgid is never killed. */
const markedMembers = (variable: string, record: ProcessRecord): ReadonlyArray<number> =>
  liveMembers(record.pgid).filter((pid) => markerOf(variable, pid) === ownerMarker(variable, record.owner))

const parseMarker = (marker: string): ProcessRecord["owner"] | undefined => {
  const m = /^[A-Z_]+=(\d+):(\d+)$/.exec(marker)
  return m === null ? undefined : { pid: Number(m[1]), startTime: m[2]! }
}

/**
 * Shells no record names whose owner is gone, found by the marker in their environment. A shell
 * is recorded before its command runs (Bash's gate), so this finds only what escaped a record:
 * a command that left its group (setsid), or a record that could not be written.
 */
const unrecordedOrphans = (variable: string, dir: string): ReadonlyArray<{ readonly pgid: number; readonly pids: ReadonlyArray<number> }> => {
  if (!hasProc) return []
  const own = readProcStat("self")?.pgrp
  const groups = new Map<number, Array<number>>()
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const pid = Number(entry)
    if (pid === process.pid) continue
    const environ = environOf(pid)
    // Another home's orphans are that home's to reap (its records say more than a marker can).
    if (!environ.includes(`${registryVariable(variable)}=${dir}`)) continue
    const marker = environ.find((entry) => entry.startsWith(`${variable}=`))
    const owner = marker === undefined ? undefined : parseMarker(marker)
    if (owner === undefined || stillRunning(owner.pid, owner.startTime)) continue
    const stat = readProcStat(pid)
    if (stat === undefined || stat.state === "Z" || stat.state === "X" || stat.pgrp === own) continue
    groups.set(stat.pgrp, [...(groups.get(stat.pgrp) ?? []), pid])
  }
  return [...groups.entries()].map(([pgid, pids]) => ({ pgid, pids }))
}

const decodeRecord = Schema.decodeUnknownEither(Schema.parseJson(ProcessRecord))

const recordFile = (dir: string, pgid: number) => Path.join(dir, `${pgid}.json`)

const readRecords = (dir: string) =>
  Effect.sync(() => {
    const entries = Fs.existsSync(dir) ? Fs.readdirSync(dir).filter((name) => name.endsWith(".json")) : []
    return entries.map((name) => {
      const file = Path.join(dir, name)
      const text = Either.try(() => Fs.readFileSync(file, "utf8"))
      const decoded = Either.flatMap(text, decodeRecord)
      return { file, record: Either.getOrUndefined(decoded) }
    })
  })

/**
 * Kills the groups recorded by owners that are no longer running, then any marked shell of a dead
 * owner that no record names; returns the pgids. Records of live owners (another Baton process on
 * this workspace) are left alone.
 */
export const reapOrphans = (dir: string, grace: Duration.DurationInput, variable: string = OWNER_ENV) =>
  Effect.gen(function*() {
    const reaped: Array<number> = []
    for (const { file, record } of yield* readRecords(dir)) {
      if (record !== undefined && stillRunning(record.owner.pid, record.owner.startTime)) continue
      if (record !== undefined && markedMembers(variable, record).length > 0) {
        yield* killGroup(record.pgid, grace)
        reaped.push(record.pgid)
      }
      yield* Effect.sync(() => Fs.rmSync(file, { force: true }))
    }
    for (const group of unrecordedOrphans(variable, dir)) {
      // A group is signalled whole only when every live member is marked; otherwise just the marked ones.
      const whole = liveMembers(group.pgid).every((pid) => group.pids.includes(pid))
      if (whole) yield* killGroup(group.pgid, grace)
      else for (const pid of group.pids) yield* killProcess(pid, grace)
      reaped.push(group.pgid)
    }
    return reaped
  })

/** Records every shell group in `dir` while it runs; without /proc there is nothing to check later, so it records nothing. */
export const makeProcessRegistry = (dir: string, variable: string = OWNER_ENV): Effect.Effect<ProcessTracker> =>
  Effect.sync(() => {
    const self = readProcStat("self")
    if (self === undefined) return noProcessTracking
    const owner = { pid: process.pid, startTime: self.startTime }
    Fs.mkdirSync(dir, { recursive: true })
    return {
      env: { [variable]: `${owner.pid}:${owner.startTime}`, [registryVariable(variable)]: dir },
      register: (pgid) => Effect.sync(() => Fs.writeFileSync(recordFile(dir, pgid), JSON.stringify({ pgid, owner }))),
      unregister: (pgid) => Effect.sync(() => Fs.rmSync(recordFile(dir, pgid), { force: true }))
    }
  })
