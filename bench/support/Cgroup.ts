/**
 * A CPU quota for a child process: a cgroup v1 `cpu` group of its own (root only), made before the
 * process starts and removed when it has stopped, so runners compared with each other each get the
 * same share of the machine however many run at once.
 */
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"

const ROOT = "/sys/fs/cgroup/cpu"
const PERIOD_US = 100_000

/** Why quotas cannot be set here, or undefined when they can. */
export const unavailable = (): string | undefined => {
  try {
    Fs.accessSync(Path.join(ROOT, "cgroup.procs"), Fs.constants.W_OK)
    return undefined
  } catch {
    return `${ROOT} is not writable (cgroup v1 and root are needed)`
  }
}

export interface Quota {
  /** Moves a running process into the group. */
  readonly enter: (pid: number) => void
}

/** A group holding its processes to `cpus` of one CPU (0.3 = 30 ms in every 100 ms); removed with the scope. */
export const quota = (name: string, cpus: number) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = Path.join(ROOT, `baton-bench-${name}-${process.pid}`)
      Fs.mkdirSync(dir)
      Fs.writeFileSync(Path.join(dir, "cpu.cfs_period_us"), String(PERIOD_US))
      Fs.writeFileSync(Path.join(dir, "cpu.cfs_quota_us"), String(Math.round(cpus * PERIOD_US)))
      return { dir, enter: (pid: number) => Fs.writeFileSync(Path.join(dir, "cgroup.procs"), String(pid)) }
    }),
    ({ dir }) =>
      Effect.sync(() => {
        // A process still inside (one that outlived its stop) goes back to the root group first.
        for (const pid of Fs.readFileSync(Path.join(dir, "cgroup.procs"), "utf8").split("\n").filter((l) => l !== "")) {
          try {
            Fs.writeFileSync(Path.join(ROOT, "cgroup.procs"), pid)
          } catch {
            // Gone meanwhile.
          }
        }
        Fs.rmdirSync(dir)
      })
  )
