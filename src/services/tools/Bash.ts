import { Duration, Effect, Option, Schema } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Os from "node:os"
import { ToolError } from "../../domain/Errors.js"
import { sandboxFailureNote } from "../../domain/Sandbox.js"
import { makeOutputCapture, type OutputCapture } from "./OutputCapture.js"
import { killGroup } from "../ProcessGroup.js"
import { makeTool, type ToolContext, type ToolLimits, type ToolOutput } from "./Tool.js"

const HINT = "narrow the command's output (pipe it through head, tail or grep), or redirect it to a file and Read it in parts"
/** How long to wait for the pipes to drain after the group is gone (a daemon outside it may hold them). */
const DRAIN = Duration.millis(500)

const SANDBOX_ARG = Schema.optionalWith(
  Schema.Boolean.annotations({
    description: "false runs the command outside the sandbox, always after asking the user: only when the sandbox prevents the task " +
      "(it needs the network, or to write outside the workspace)"
  }),
  { exact: true }
)

/**
 * The arguments; `sandbox` only where commands run in one. Without it the definition is exactly the
 * one models saw before the sandbox existed, so recordings made without it still replay.
 */
export const makeBashArgs = (limits: ToolLimits) =>
  Schema.Struct({
    command: Schema.NonEmptyString.annotations({ description: "The shell command to run (bash -c) in the workspace directory" }),
    timeout: Schema.optionalWith(
      Schema.Number.pipe(Schema.int(), Schema.between(1, limits.bashMaxTimeoutMs)).annotations({
        description: `Milliseconds before the command is killed (default ${limits.bashDefaultTimeoutMs}, at most ${limits.bashMaxTimeoutMs})`
      }),
      { exact: true }
    ),
    description: Schema.optionalWith(
      Schema.String.annotations({ description: "A few words saying what the command does, shown to the user" }),
      { exact: true }
    )
  })
const makeSandboxedBashArgs = (limits: ToolLimits) => Schema.Struct({ ...makeBashArgs(limits).fields, sandbox: SANDBOX_ARG })
export type BashArgs = Schema.Schema.Type<ReturnType<typeof makeSandboxedBashArgs>>

interface Spawned {
  readonly child: ChildProcess
  readonly pgid: number
  readonly stdout: OutputCapture
  readonly stderr: OutputCapture
}

interface Exited {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/**
 * The shell starts gated: it waits for a line on fd 3 before it runs the user's command, so the
 * group is recorded on disk before anything of the command can run. Should Baton die before the
 * release, the pipe closes unread and the shell exits without running anything: no instant leaves a
 * command running unrecorded. `exec` keeps the pid (the group leader) and gives the command the same
 * `bash -c` it always had.
 */
export const GATE = 'IFS= read -r -u 3 go; [ "$go" = go ] || exit 125; exec 3<&-; exec bash -c "$1"'

/**
 * Inside the sandbox the gated shell runs under bubblewrap, which keeps the process group (one
 * signal still reaches everything) and the pipes, fd 3 included; its PID namespace dies whole with
 * its first process, and with Baton (die-with-parent).
 */
const spawnGroup = (command: string, ctx: ToolContext, sandboxed: boolean) =>
  Effect.async<Spawned, ToolError>((resume) => {
    const shell = ["bash", "-c", GATE, "bash", command]
    const launch = sandboxed && ctx.sandbox !== undefined
      ? ctx.sandbox.launch(shell, ctx.workspace, ctx.roots)
      : { file: "bash", args: shell.slice(1), env: {} }
    const child = spawn(launch.file, launch.args, {
      cwd: ctx.workspace,
      // Its own process group, so one signal reaches every process the command starts.
      detached: true,
      stdio: ["ignore", "pipe", "pipe", "pipe"],
      env: { ...process.env, ...ctx.processes.env, ...launch.env }
    })
    const stdout = makeOutputCapture(ctx.limits.outputChars)
    const stderr = makeOutputCapture(ctx.limits.outputChars)
    child.stdout?.setEncoding("utf8").on("data", stdout.push)
    child.stderr?.setEncoding("utf8").on("data", stderr.push)
    child.once("spawn", () => resume(Effect.succeed({ child, pgid: child.pid!, stdout, stderr })))
    child.on("error", (cause) => resume(Effect.fail(new ToolError({ tool: "Bash", message: `could not start bash: ${cause.message}` }))))
  })

/** Lets the gated shell run the command (see GATE). A shell already gone makes the write fail: ignored, its exit says the rest. */
const release = (child: ChildProcess) =>
  Effect.sync(() => {
    const gate = child.stdio[3]
    if (gate === null || gate === undefined || !("write" in gate)) return
    gate.on("error", () => {})
    gate.end("go\n")
  })

const awaitExit = (child: ChildProcess) =>
  Effect.async<Exited>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resume(Effect.succeed({ code: child.exitCode, signal: child.signalCode }))
      return
    }
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => resume(Effect.succeed({ code, signal }))
    child.once("exit", onExit)
    return Effect.sync(() => child.off("exit", onExit))
  })

const awaitPipesClosed = (child: ChildProcess) =>
  Effect.async<void>((resume) => {
    if (child.stdout?.readableEnded !== false && child.stderr?.readableEnded !== false) {
      resume(Effect.void)
      return
    }
    const onClose = () => resume(Effect.void)
    child.once("close", onClose)
    return Effect.sync(() => child.off("close", onClose))
  })

/** As a shell reports it: a process killed by signal N exits with 128 + N. */
const exitCodeOf = (exited: Exited): number =>
  exited.code ?? 128 + (exited.signal === null ? 0 : Os.constants.signals[exited.signal])

const render = (p: Spawned, exitCode: number, timedOutMs: number | undefined, limits: ToolLimits, note: string | undefined): ToolOutput => {
  const notes = 300
  const errTotal = p.stderr.total()
  const errBudget = Math.min(errTotal, Math.floor(limits.outputChars / 2))
  const outBudget = limits.outputChars - errBudget - notes
  const stdout = p.stdout.render(outBudget, HINT)
  const stderr = p.stderr.render(limits.outputChars - Math.min(p.stdout.total(), outBudget) - notes, HINT)
  const parts: Array<string> = []
  if (stdout !== "") parts.push(stdout.replace(/\n$/, ""))
  if (stderr !== "") parts.push(`[stderr]\n${stderr.replace(/\n$/, "")}`)
  if (timedOutMs !== undefined) parts.push(`[command timed out after ${timedOutMs} ms; its process group was killed]`)
  if (exitCode !== 0) parts.push(`[exit code ${exitCode}]`)
  if (note !== undefined) parts.push(note)
  return {
    output: parts.length === 0 ? "(no output)" : parts.join("\n"),
    isError: exitCode !== 0 || timedOutMs !== undefined,
    exit_code: exitCode,
    stdout: p.stdout.render(limits.outputChars, HINT),
    stderr: p.stderr.render(limits.outputChars, HINT)
  }
}

const SANDBOX_TEXT = "It runs inside a sandbox: it may write only in the workspace (and a private /tmp), " +
  "cannot see the user's secrets and has no network unless the user allowed it; " +
  "set sandbox: false only when the sandbox prevents the task (the user is then always asked). "

export const makeBashTool = (limits: ToolLimits, sandboxed = false) =>
  makeTool<BashArgs, Schema.Schema.Encoded<ReturnType<typeof makeSandboxedBashArgs>>>({
    name: "Bash",
    description: "Runs a shell command with bash -c in the workspace directory and returns its output and exit code. " +
      `It is killed after timeout ms (default ${limits.bashDefaultTimeoutMs}, max ${limits.bashMaxTimeoutMs}). ` +
      "Processes it leaves running in the background are killed when it ends. stdin is empty. " +
      (sandboxed ? SANDBOX_TEXT : "") +
      "Prefer Read, Grep, Glob and LS for looking at files.",
    parameters: sandboxed ? makeSandboxedBashArgs(limits) : makeBashArgs(limits),
    truncationHint: HINT,
    run: (args, ctx) =>
      Effect.scoped(Effect.gen(function*() {
        const grace = Duration.millis(ctx.limits.killGraceMs)
        // Every exit path (success, failure, interrupt) kills what is left of the group.
        const sandbox = ctx.sandbox?.status
        const sandboxed = sandbox?.active === true && args.sandbox !== false
        const p = yield* Effect.acquireRelease(
          Effect.tap(spawnGroup(args.command, ctx, sandboxed), (s) => Effect.zipRight(ctx.processes.register(s.pgid), release(s.child))),
          (s) => Effect.zipRight(killGroup(s.pgid, grace), ctx.processes.unregister(s.pgid))
        )
        const timeoutMs = args.timeout ?? ctx.limits.bashDefaultTimeoutMs
        const finished = yield* awaitExit(p.child).pipe(Effect.timeoutOption(Duration.millis(timeoutMs)))
        if (Option.isNone(finished)) yield* killGroup(p.pgid, grace)
        const exited = Option.isSome(finished) ? finished.value : yield* awaitExit(p.child)
        // Background children keep the pipes open; once the group is gone the rest drains quickly.
        yield* killGroup(p.pgid, grace)
        yield* awaitPipesClosed(p.child).pipe(Effect.timeoutOption(DRAIN))
        const exitCode = exitCodeOf(exited)
        const note = sandboxed && sandbox !== undefined && Option.isSome(finished)
          ? sandboxFailureNote(exitCode, `${p.stderr.render(4_000, "")}\n${p.stdout.render(4_000, "")}`, sandbox)
          : undefined
        return render(p, exitCode, Option.isNone(finished) ? timeoutMs : undefined, ctx.limits, note)
      }))
  })
