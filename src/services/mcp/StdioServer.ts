import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js"
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { Data, type Duration, Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { McpLaunch } from "../../domain/McpConfig.js"
import { killGroup } from "../ProcessGroup.js"
import type { ProcessTracker } from "../ProcessRegistry.js"
import type { Sandbox } from "../Sandbox.js"

/**
 * A stdio MCP server as a child process Baton owns. The SDK's StdioClientTransport spawns into
 * Baton's own process group (a terminal's Ctrl-C would kill the server before its calls could be
 * cancelled) and kills only its direct child; here the server gets a process group of its own,
 * recorded in the registry before the server's command runs, and the whole group goes when the
 * scope closes, as the MCP spec says: close stdin, wait, SIGTERM, then SIGKILL.
 */

export class StdioStartError extends Data.TaggedError("StdioStartError")<{ readonly message: string }> {}

type StdioLaunch = Extract<McpLaunch, { readonly _tag: "Stdio" }>

export interface StdioServer {
  /** The SDK transport over the child's stdin and stdout. */
  readonly transport: Transport
  readonly pgid: number
  /** How the process ended and the last lines it wrote to stderr; undefined while it runs. */
  readonly exit: () => string | undefined
  /** The last lines the server wrote to stderr. */
  readonly stderrTail: () => string
}

/**
 * `sh` holds the group until fd 3 gives it a line, which comes only once the group is recorded: a
 * Baton that dies in between leaves a shell that exits on the closed pipe, never an unrecorded server.
 */
const GATE = "IFS= read -r _ <&3 || exit 125; exec 3<&-; exec \"$0\" \"$@\""

const TAIL_CHARS = 4_000

const tailLines = (text: string, lines = 10): string => text.trimEnd().split("\n").slice(-lines).join("\n")

const describeExit = (child: ChildProcess, stderr: string): string => {
  const how = child.signalCode !== null ? `was killed by ${child.signalCode}` : child.exitCode === 127 ? "could not run its command (exit code 127)" : `exited with code ${child.exitCode}`
  const said = tailLines(stderr)
  return said === "" ? how : `${how}: ${said}`
}

/** How to run the gated shell: as it is, or inside the sandbox with its working directory writable. */
const commandLine = (launch: StdioLaunch, sandbox: Sandbox | undefined) => {
  const gated = ["/bin/sh", "-c", GATE, launch.command, ...launch.args]
  return launch.sandbox === true && sandbox?.status.active === true
    // The server's own files (an absolute script path, the project around it) stay readable even under the private /tmp.
    ? sandbox.launch(gated, launch.cwd, [], [launch.command, ...launch.args].filter((arg) => Path.isAbsolute(arg)))
    : { file: gated[0]!, args: gated.slice(1), env: {} }
}

const spawnGated = (launch: StdioLaunch, tracker: ProcessTracker, sandbox: Sandbox | undefined) =>
  Effect.async<ChildProcess, StdioStartError>((resume) => {
    const line = commandLine(launch, sandbox)
    const child = spawn(line.file, line.args, {
      cwd: launch.cwd,
      detached: true,
      stdio: ["pipe", "pipe", "pipe", "pipe"],
      // The SDK's safe subset (HOME, PATH, …), not Baton's environment: API keys stay here.
      env: { ...getDefaultEnvironment(), ...launch.env, ...tracker.env, ...line.env }
    })
    let settled = false
    child.once("spawn", () => {
      settled = true
      resume(Effect.succeed(child))
    })
    // Kept for the child's whole life: an 'error' event without a listener would crash Baton.
    child.on("error", (cause) => {
      if (settled) return
      settled = true
      resume(Effect.fail(new StdioStartError({ message: `could not start ${launch.command}: ${cause.message}` })))
    })
  })

const awaitExit = (child: ChildProcess) =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    const done = () => resume(Effect.void)
    child.once("exit", done)
    return Effect.sync(() => child.off("exit", done))
  })

const asError = (cause: unknown): Error => (cause instanceof Error ? cause : new Error(String(cause)))

/** The SDK's Transport over a running child's stdio: messages are newline-delimited JSON. */
const childTransport = (child: ChildProcess): Transport => {
  const buffer = new ReadBuffer()
  let closed = false
  const transport: Transport = {
    start: () => {
      // Nothing may throw out of a stream listener (it would crash Baton): a line that is not
      // JSON-RPC is reported and skipped; a message past the buffer limit ends the connection.
      child.stdout?.on("data", (chunk: Buffer) => {
        try {
          buffer.append(chunk)
        } catch (cause) {
          transport.onerror?.(asError(cause))
          void transport.close()
          return
        }
        for (;;) {
          let message: JSONRPCMessage | null
          try {
            message = buffer.readMessage()
          } catch (cause) {
            transport.onerror?.(asError(cause))
            continue
          }
          if (message === null) break
          transport.onmessage?.(message)
        }
      })
      child.stdin?.on("error", (cause) => transport.onerror?.(cause))
      child.once("close", () => finish())
      return Promise.resolve()
    },
    send: (message) =>
      new Promise<void>((resolve, reject) => {
        const stdin = child.stdin
        if (closed || stdin === null || stdin.destroyed) return reject(new Error("Not connected"))
        if (stdin.write(serializeMessage(message))) resolve()
        else stdin.once("drain", resolve)
      }),
    close: () => {
      child.stdin?.end()
      finish()
      return Promise.resolve()
    }
  }
  const finish = () => {
    if (closed) return
    closed = true
    buffer.clear()
    transport.onclose?.()
  }
  return transport
}

/**
 * Starts the server in its own recorded process group. Closing the scope ends stdin, gives the server
 * `grace` to exit by itself, then kills whatever is left of the group.
 */
export const startStdioServer = (launch: StdioLaunch, tracker: ProcessTracker, grace: Duration.DurationInput, sandbox?: Sandbox) =>
  Effect.gen(function*() {
    if (!Fs.existsSync(launch.cwd)) return yield* new StdioStartError({ message: `cannot start: its working directory ${launch.cwd} does not exist` })
    // Never silently unsandboxed: a server that asks for the sandbox does not start without one.
    if (launch.sandbox === true && sandbox !== undefined && sandbox.status.mode !== "off" && !sandbox.status.active) {
      return yield* new StdioStartError({ message: `cannot start: it asks for the sandbox, and ${sandbox.status.unavailable ?? "none is available"}` })
    }
    const child = yield* Effect.acquireRelease(
      Effect.tap(spawnGated(launch, tracker, sandbox), (child) => tracker.register(child.pid!)),
      (child) =>
        Effect.gen(function*() {
          child.stdin?.end()
          yield* Effect.interruptible(awaitExit(child)).pipe(Effect.timeoutOption(grace))
          yield* killGroup(child.pid!, grace)
          yield* tracker.unregister(child.pid!)
        })
    )
    let stderr = ""
    child.stderr?.setEncoding("utf8").on("data", (text: string) => {
      stderr = (stderr + text).slice(-TAIL_CHARS)
    })
    // The group is recorded: let the server's command run.
    const gate = child.stdio[3] as NodeJS.WritableStream | null
    gate?.on("error", () => undefined)
    gate?.end(Os.EOL)
    return {
      transport: childTransport(child),
      pgid: child.pid!,
      exit: () => (child.exitCode !== null || child.signalCode !== null ? describeExit(child, stderr) : undefined),
      stderrTail: () => tailLines(stderr)
    } satisfies StdioServer
  })
