import { Effect, Option } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import { BIN, cleanEnv, ROOT } from "../support/cliProcess.js"

/**
 * The processes of a soak iteration: `baton run` (optionally in a pseudo-terminal, so it can ask for
 * approval) and `baton serve`, each watched line by line so the harness can wait for a moment to kill.
 */

export interface Child {
  readonly pid: () => number | undefined
  /** Every output line so far (stdout and stderr; in a pty they are one stream). */
  readonly lines: () => ReadonlyArray<string>
  /** Resolves when a line matching `test` has arrived, or with none when the process exited first. */
  readonly waitLine: (test: (line: string) => boolean) => Effect.Effect<Option.Option<string>>
  readonly exited: Effect.Effect<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  readonly kill: (signal: NodeJS.Signals) => Effect.Effect<void>
  /** Types into the process (its pty, or its stdin). */
  readonly type: (text: string) => Effect.Effect<void>
  /** How many approval questions it has asked so far. */
  readonly prompts: () => number
}

/** The process pty.spawn started: the child of the python driver. */
const ptyChild = (driver: number): number | undefined => {
  try {
    const children = Fs.readFileSync(`/proc/${driver}/task/${driver}/children`, "utf8").trim()
    const first = children.split(/\s+/)[0]
    return first === undefined || first === "" ? undefined : Number(first)
  } catch {
    return undefined
  }
}

const PROMPT = /answer \(y\/a\/n\)/g

const PTY = "import pty, sys\nsys.exit(pty.spawn(sys.argv[1:]) >> 8)"

export const startChild = (
  args: ReadonlyArray<string>,
  options: { readonly env: Record<string, string>; readonly cwd?: string; readonly pty?: boolean }
): Effect.Effect<Child> =>
  Effect.sync(() => {
    const command = options.pty === true
      ? spawn("python3", ["-c", PTY, process.execPath, BIN, ...args], {
        cwd: options.cwd ?? ROOT,
        env: { ...cleanEnv(options.env), TERM: "dumb" },
        stdio: ["pipe", "pipe", "pipe"]
      })
      : spawn(process.execPath, [BIN, ...args], { cwd: options.cwd ?? ROOT, env: cleanEnv(options.env), stdio: ["pipe", "pipe", "pipe"] })
    if (options.pty !== true) command.stdin.end()
    const lines: Array<string> = []
    let all = ""
    let asked: ReadonlyArray<string> = []
    const waiters = new Set<() => void>()
    let exit: { readonly code: number | null; readonly signal: NodeJS.Signals | null } | undefined
    const wake = () => {
      for (const waiter of [...waiters]) waiter()
    }
    const reader = (stream: NodeJS.ReadableStream) => {
      let buffer = ""
      stream.setEncoding("utf8")
      stream.on("data", (text: string) => {
        all += text
        asked = all.match(PROMPT) ?? []
        buffer += text.replace(/\r/g, "")
        let end: number
        while ((end = buffer.indexOf("\n")) >= 0) {
          lines.push(buffer.slice(0, end))
          buffer = buffer.slice(end + 1)
        }
        // A prompt waits without a newline: it counts as a line too.
        if (/answer \(y\/a\/n\)/.test(buffer)) {
          lines.push(buffer)
          buffer = ""
        }
        wake()
      })
    }
    reader(command.stdout)
    reader(command.stderr)
    command.once("close", (code, signal) => {
      exit = { code, signal }
      wake()
    })
    const child: ChildProcess = command
    return {
      pid: () => (options.pty === true ? (child.pid === undefined ? undefined : ptyChild(child.pid)) : child.pid),
      lines: () => lines,
      waitLine: (test) =>
        Effect.async<Option.Option<string>>((resume) => {
          let seen = 0
          const check = () => {
            for (; seen < lines.length; seen++) {
              if (test(lines[seen]!)) {
                waiters.delete(check)
                return resume(Effect.succeed(Option.some(lines[seen]!)))
              }
            }
            if (exit !== undefined) {
              waiters.delete(check)
              resume(Effect.succeed(Option.none()))
            }
          }
          waiters.add(check)
          check()
          return Effect.sync(() => waiters.delete(check))
        }),
      exited: Effect.async((resume) => {
        const check = () => {
          if (exit === undefined) return
          waiters.delete(check)
          resume(Effect.succeed(exit))
        }
        waiters.add(check)
        check()
        return Effect.sync(() => waiters.delete(check))
      }),
      type: (text) => Effect.sync(() => void (command.stdin.writable && command.stdin.write(text))),
      prompts: () => asked.length,
      kill: (signal) =>
        Effect.sync(() => {
          const pid = options.pty === true ? (child.pid === undefined ? undefined : ptyChild(child.pid)) : child.pid
          if (pid !== undefined && exit === undefined) {
            try {
              process.kill(pid, signal)
            } catch {
              // gone already
            }
          }
        })
    }
  })

/** A child killed at scope end whatever happens (the python driver and its child in a pty). */
export const scopedChild = (args: ReadonlyArray<string>, options: Parameters<typeof startChild>[1]) =>
  Effect.acquireRelease(startChild(args, options), (child) => Effect.zipRight(child.kill("SIGKILL"), Effect.ignore(Effect.timeout(child.exited, "5 seconds"))))
