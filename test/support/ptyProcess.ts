import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { BIN, cleanEnv, ROOT } from "./cliProcess.js"

export type PtyStep =
  | { readonly expect: string; readonly timeout?: number }
  | { readonly send: string }
  | { readonly wait_file: string }
  | { readonly touch: string }
  /** SIGKILL the program (a crash) and wait until it is gone. */
  | { readonly kill: true }
  | { readonly expect_screen: string; readonly timeout?: number }
  | { readonly wait_exit: true; readonly timeout?: number }

export interface PtyResult {
  readonly ok: boolean
  readonly exit_code: number | null
  readonly failed_step: number | null
  readonly reason: string | null
  readonly transcript: string
  /** The visible screen at each `expect_screen` step. */
  readonly screens: ReadonlyArray<string>
}

/** Runs the built CLI in a pseudo-terminal (test/support/pty_driver.py) through `steps`. */
export const runInPty = (args: ReadonlyArray<string>, steps: ReadonlyArray<PtyStep>, env: Record<string, string>) =>
  Effect.async<PtyResult>((resume) => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-pty-"))
    const script = Path.join(dir, "script.json")
    Fs.writeFileSync(script, JSON.stringify(steps))
    const driver = Path.join(import.meta.dirname, "pty_driver.py")
    const child = spawn("python3", [driver, script, "--", process.execPath, BIN, ...args], {
      cwd: ROOT,
      env: { ...cleanEnv(env), TERM: "xterm-256color" },
      stdio: ["ignore", "pipe", "inherit"]
    })
    let out = ""
    child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c))
    child.on("close", () => {
      Fs.rmSync(dir, { recursive: true, force: true })
      resume(Effect.sync((): PtyResult => JSON.parse(out) as PtyResult))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })
