import { Deferred, Effect } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type TaskEvent, TaskEventFromJson } from "../../src/domain/Events.js"
import { Schema } from "effect"

export const ROOT = Path.join(import.meta.dirname, "..", "..")
export const BIN = Path.join(ROOT, "bin", "baton.js")

export interface CliResult {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** The environment of a CLI child: nothing of the developer's own Baton or model configuration leaks in. */
export const cleanEnv = (extra: Record<string, string> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(BATON_|OPENAI_|ANTHROPIC_|OTEL_)/.test(k)) continue
    env[k] = v
  }
  return { ...env, NO_COLOR: "1", ...extra }
}

export interface CliOptions {
  readonly env?: Record<string, string>
  readonly cwd?: string
  /** Written to stdin, which is then closed (stdin is a pipe: never a terminal). */
  readonly input?: string
}

/** Starts the built CLI; `signal` sends it a signal, `result` waits for it to exit. Killed with the scope. */
export const startCli = (args: ReadonlyArray<string>, options: CliOptions = {}) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd ?? ROOT, env: cleanEnv(options.env), stdio: ["pipe", "pipe", "pipe"] })
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c))
      child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c))
      child.stdin.end(options.input ?? "")
      const result = Effect.async<CliResult>((resume) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          resume(Effect.succeed({ code: child.exitCode, signal: child.signalCode, stdout, stderr }))
          return
        }
        child.once("close", (code, signal) => resume(Effect.succeed({ code, signal, stdout, stderr })))
      })
      return { child, result, signal: (signal: NodeJS.Signals) => Effect.sync(() => void child.kill(signal)) }
    }),
    ({ child }) => Effect.sync(() => void (child.exitCode === null && child.signalCode === null && child.kill("SIGKILL")))
  )

/** Runs the built CLI to completion. */
export const runCli = (args: ReadonlyArray<string>, options: CliOptions = {}) =>
  Effect.scoped(Effect.flatMap(startCli(args, options), (cli) => cli.result))

const decodeLine = Schema.decodeUnknownSync(TaskEventFromJson)

/** Every stdout line must be one task event: the `--json` contract. */
export const jsonEvents = (stdout: string): ReadonlyArray<TaskEvent> =>
  stdout.split("\n").filter((l) => l !== "").map((l) => decodeLine(l))

/** A fresh BATON_HOME and workspace, removed with the scope. */
export const cliDirs = Effect.acquireRelease(
  Effect.sync(() => {
    const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-cli-"))
    const home = Path.join(root, "home")
    const workspace = Path.join(root, "ws")
    Fs.mkdirSync(home)
    Fs.mkdirSync(workspace)
    return { root, home, workspace: Fs.realpathSync(workspace) }
  }),
  (dirs) => Effect.sync(() => Fs.rmSync(dirs.root, { recursive: true, force: true }))
)

export type CliDirs = Effect.Effect.Success<typeof cliDirs>

/** Gone, or a zombie nobody has reaped yet (an orphan's parent here may be a PID 1 that never reaps). */
export const processGone = (pid: number): boolean => {
  try {
    const state = Fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0]
    return state === "Z" || state === "X"
  } catch {
    return true
  }
}

/**
 * A long-running `baton` command as a child process: resolves once its stderr prints `<command>: <url>`;
 * dies with its stderr if it exits first. Killed with the scope (SIGKILL); `stop` sends SIGTERM.
 */
export const startListening = (command: string, args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.gen(function*() {
    const url = yield* Deferred.make<string>()
    const exited = yield* Deferred.make<number | null>()
    const printed = new RegExp(`baton ${command}: (http:\\/\\/\\S+)`)
    let stderr = ""
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = spawn(process.execPath, [BIN, command, ...args], { env: cleanEnv(env), stdio: ["ignore", "pipe", "pipe"] })
        child.stderr.setEncoding("utf8").on("data", (text: string) => {
          stderr += text
          const found = printed.exec(stderr)
          if (found !== null) Deferred.unsafeDone(url, Effect.succeed(found[1]!))
        })
        child.once("close", (code) => {
          Deferred.unsafeDone(url, Effect.dieMessage(`baton ${command} exited (${code}) before listening: ${stderr}`))
          Deferred.unsafeDone(exited, Effect.succeed(code))
        })
        return child
      }),
      (child) => Effect.sync(() => void (child.exitCode === null && child.kill("SIGKILL")))
    )
    return {
      url: yield* Deferred.await(url),
      exited: Deferred.await(exited),
      stop: Effect.sync(() => void child.kill("SIGTERM")),
      signal: (signal: NodeJS.Signals) => Effect.sync(() => void child.kill(signal)),
      stderr: Effect.sync(() => stderr)
    }
  })

/** `baton serve` as a child process (port 0), for `--server` clients. */
export const startServe = (args: ReadonlyArray<string>, env: Record<string, string>) => startListening("serve", ["--port", "0", ...args], env)
