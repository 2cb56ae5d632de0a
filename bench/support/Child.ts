/**
 * Timing a whole process: wall time from spawn to exit, and the child's own CPU time and peak RSS
 * (reported by the `usage.cjs` preload as it exits). Every process a benchmark compares against a
 * floor is started the same way, preload included, so the two figures differ only in what they run.
 */
import { type ChildProcess, spawn, type SpawnOptions } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

export const usagePreload = Path.join(import.meta.dirname, "usage.cjs")

export interface Measured {
  readonly wallMs: number
  readonly cpuMs: number
  readonly maxRssMb: number
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  /** `performance.now()` at spawn, to compare with events the parent observed (a model request). */
  readonly startedAt: number
}

export interface RunOptions {
  readonly env?: Record<string, string | undefined>
  readonly cwd?: string
  /** Keep stdout (default: counted and dropped, so a long answer costs the parent nothing). */
  readonly keepStdout?: boolean
}

let counter = 0

export interface Running {
  readonly child: ChildProcess
  /** Resolves with the first stderr line matching `pattern` (a server announcing its address). */
  readonly waitFor: (pattern: RegExp) => Promise<RegExpMatchArray>
  readonly exited: Promise<Measured>
}

/** `node --require usage.cjs …args`, measured until it exits. */
export const spawnMeasured = (args: ReadonlyArray<string>, options: RunOptions = {}): Running => {
  const usageFile = Path.join(Os.tmpdir(), `baton-bench-usage-${process.pid}-${++counter}.json`)
  const spawnOptions: SpawnOptions = {
    env: { ...process.env, ...options.env, BENCH_USAGE_FILE: usageFile },
    stdio: ["ignore", "pipe", "pipe"],
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {})
  }
  const startedAt = performance.now()
  const child = spawn(process.execPath, ["--require", usagePreload, ...args], spawnOptions)
  const out: Array<Buffer> = []
  const err: Array<Buffer> = []
  child.stdout!.on("data", (b: Buffer) => (options.keepStdout === true ? out.push(b) : undefined))
  child.stderr!.on("data", (b: Buffer) => err.push(b))
  const exited = new Promise<Measured>((resolve, reject) => {
    child.on("error", reject)
    child.on("close", (code) => {
      const wallMs = performance.now() - startedAt
      let usage = { userUs: 0, systemUs: 0, maxRssKb: 0 }
      try {
        usage = JSON.parse(Fs.readFileSync(usageFile, "utf8"))
        Fs.rmSync(usageFile, { force: true })
      } catch {
        // A child that died without running its exit hook reports no usage; the figures show 0.
      }
      resolve({
        wallMs,
        cpuMs: (usage.userUs + usage.systemUs) / 1000,
        maxRssMb: usage.maxRssKb / 1024,
        code,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
        startedAt
      })
    })
  })
  const waitFor = (pattern: RegExp) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const look = () => {
        const match = Buffer.concat(err).toString("utf8").match(pattern)
        if (match === null) return false
        child.stderr!.off("data", look)
        resolve(match)
        return true
      }
      if (!look()) child.stderr!.on("data", look)
      void exited.then((m) => reject(new Error(`exited ${m.code} before printing ${pattern}: ${m.stderr.slice(0, 2000)}`)))
    })
  return { child, waitFor, exited }
}

export const measure = (args: ReadonlyArray<string>, options: RunOptions = {}): Promise<Measured> =>
  spawnMeasured(args, options).exited

export const median = (xs: ReadonlyArray<number>): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

export const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

/** A fresh directory, removed by `cleanup`. */
export const tempDir = (prefix: string): string => Fs.mkdtempSync(Path.join(Os.tmpdir(), `baton-bench-${prefix}-`))
