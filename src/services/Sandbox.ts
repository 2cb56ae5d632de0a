import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { SandboxMode, SandboxStatus } from "../domain/Sandbox.js"
import { bwrapArgs, type MountPlan, seatbeltProfile } from "../domain/SandboxProfile.js"

/**
 * The OS sandbox a shell command (or a stdio MCP server) runs in: bubblewrap from the distribution
 * on Linux (Baton never downloads one), `sandbox-exec` on macOS. Found and tried once when the
 * executor starts; each command then gets a plan built from the file system as it is at that moment
 * (which secrets exist, which `.env` files the workspace has).
 */
export interface SandboxConfig {
  readonly mode: SandboxMode
  /**
   * The mode is only the default, not the user's choice: where no sandbox is available, commands
   * run as with `off` (the status says why) instead of every call being asked.
   */
  readonly fallback?: boolean
  readonly network?: boolean
  /** More writable directories (absolute, `~/…`, or relative to the workspace). */
  readonly writable?: ReadonlyArray<string>
  /** More paths to hide, written the same way. */
  readonly hidden?: ReadonlyArray<string>
  /** The user's home: its secrets are hidden. Default: the OS's. */
  readonly home?: string
  /** Baton's own home (the conversation store, settings): hidden. */
  readonly batonHome?: string
  /** A workspace `.env*` file a rule lets the model read stays visible. */
  readonly exposed?: (absolute: string) => boolean
  /** Where to look for bwrap instead of PATH (tests point it at an empty directory). */
  readonly searchPath?: string
}

export interface SandboxLaunch {
  readonly file: string
  readonly args: ReadonlyArray<string>
  /** Added to the command's environment. */
  readonly env: Readonly<Record<string, string>>
}

export interface Sandbox {
  readonly status: SandboxStatus
  /** How to start `command` (argv) inside: `cwd` is the workspace, `roots` the call's other writable directories. */
  /** `readable`: paths outside the roots the command needs to read (see MountPlan.readable). */
  readonly launch: (command: ReadonlyArray<string>, cwd: string, roots: ReadonlyArray<string>, readable?: ReadonlyArray<string>) => SandboxLaunch
}

/** Secrets under the home every sandboxed command is denied. */
export const DEFAULT_HIDDEN = [".ssh", ".aws", ".gnupg", ".config/gcloud", ".docker/config.json", ".netrc", ".npmrc"] as const

/**
 * Sockets that hand out more than the sandbox allows: container daemons and the system bus (a root
 * shell on the host, for whoever may connect; a read-only mount does not stop a connect) and the SSH
 * agent (your keys, without the key files).
 */
const hiddenSockets = (): ReadonlyArray<string> => [
  "/var/run/docker.sock",
  "/run/docker.sock",
  "/run/containerd/containerd.sock",
  "/run/podman/podman.sock",
  "/run/dbus/system_bus_socket",
  "/run/systemd/private",
  ...(process.env["SSH_AUTH_SOCK"] !== undefined && process.env["SSH_AUTH_SOCK"] !== "" ? [process.env["SSH_AUTH_SOCK"]] : [])
]

export const INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap)"

const findOnPath = (name: string, searchPath: string | undefined): string | undefined => {
  for (const dir of (searchPath ?? process.env["PATH"] ?? "").split(Path.delimiter)) {
    if (dir === "") continue
    const candidate = Path.join(dir, name)
    try {
      Fs.accessSync(candidate, Fs.constants.X_OK)
      return candidate
    } catch {
      // not here
    }
  }
  return undefined
}

const privileged = () => process.getuid?.() === 0

/** Runs the smallest sandbox once: a kernel without user namespaces refuses here, not on the first command. */
const probe = (bwrap: string) =>
  Effect.async<string | undefined>((resume) => {
    const args = ["--ro-bind", "/", "/", "--unshare-pid", "--die-with-parent", ...(privileged() ? ["--cap-drop", "ALL"] : []), "--", "true"]
    execFile(bwrap, args, { timeout: 10_000 }, (error, _stdout, stderr) =>
      resume(Effect.succeed(error === null ? undefined : (stderr.trim().split("\n")[0] ?? error.message) || error.message)))
  })

const expand = (raw: string, home: string, cwd: string): string =>
  raw === "~" ? home : raw.startsWith("~/") ? Path.join(home, raw.slice(2)) : Path.resolve(cwd, raw)

/** The real path of an existing file or directory, and which it is; undefined when absent. */
const existing = (path: string): { readonly path: string; readonly directory: boolean } | undefined => {
  try {
    const real = Fs.realpathSync.native(path)
    return { path: real, directory: Fs.statSync(real).isDirectory() }
  } catch {
    return undefined
  }
}

const envFiles = (workspace: string): ReadonlyArray<string> => {
  try {
    return Fs.readdirSync(workspace).filter((name) => name.startsWith(".env")).map((name) => Path.join(workspace, name))
  } catch {
    return []
  }
}

/** The plan for one command, from the file system as it is now. */
export const planFor = (config: SandboxConfig, cwd: string, roots: ReadonlyArray<string>, readable: ReadonlyArray<string> = []): MountPlan => {
  const home = config.home ?? Os.homedir()
  const writable = config.mode === "workspace-write"
    ? [cwd, ...roots, ...(config.writable ?? []).map((dir) => expand(dir, home, cwd))].flatMap((dir) => {
      const found = existing(dir)
      return found !== undefined && found.directory ? [found.path] : []
    })
    : []
  const hidden = [
    ...DEFAULT_HIDDEN.map((p) => Path.join(home, p)),
    ...(config.batonHome !== undefined ? [config.batonHome] : []),
    ...hiddenSockets(),
    ...(config.hidden ?? []).map((p) => expand(p, home, cwd)),
    ...envFiles(cwd).filter((file) => config.exposed?.(file) !== true)
  ].flatMap((p) => {
    const found = existing(p)
    return found === undefined ? [] : [found]
  })
  return {
    mode: config.mode === "read-only" ? "read-only" : "workspace-write",
    network: config.network === true,
    cwd,
    writable: [...new Set(writable)],
    readable: readable.flatMap((p) => {
      const found = existing(p)
      return found === undefined ? [] : [found.path]
    }),
    hidden: hidden.filter((h, i) => hidden.findIndex((o) => o.path === h.path) === i),
    privileged: privileged()
  }
}

const unavailable = (config: SandboxConfig, reason: string): Sandbox => ({
  status: config.fallback === true
    ? { mode: "off", network: true, active: false, unavailable: reason }
    : { mode: config.mode, network: config.network === true, active: false, unavailable: reason },
  launch: (command) => ({ file: command[0]!, args: command.slice(1), env: {} })
})

/** Finds and tries the platform's sandbox; `off` looks for nothing. */
export const makeSandbox = (config: SandboxConfig): Effect.Effect<Sandbox> =>
  Effect.gen(function*() {
    const network = config.network === true
    if (config.mode === "off") return { ...unavailable(config, "off"), status: { mode: "off", network: true, active: false } }
    if (process.platform === "darwin") {
      const exec = findOnPath("sandbox-exec", config.searchPath ?? "/usr/bin")
      if (exec === undefined) return unavailable(config, "sandbox-exec not found")
      // One private temp dir for the process's commands (TMPDIR inside), made on first use.
      let made: string | undefined
      return {
        status: { mode: config.mode, network, active: true },
        launch: (command, cwd, roots) => {
          const tmp = made ??= Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-sandbox-"))
          return { file: exec, args: ["-p", seatbeltProfile(planFor(config, cwd, roots), tmp), "--", ...command], env: { TMPDIR: tmp } }
        }
      }
    }
    if (process.platform !== "linux") return unavailable(config, `no sandbox on ${process.platform}`)
    const bwrap = findOnPath("bwrap", config.searchPath)
    if (bwrap === undefined) return unavailable(config, `bwrap not found on PATH; ${INSTALL_HINT}`)
    const refused = yield* probe(bwrap)
    if (refused !== undefined) return unavailable(config, `bwrap cannot run here: ${refused}`)
    return {
      status: { mode: config.mode, network, active: true },
      launch: (command, cwd, roots, readable) => ({ file: bwrap, args: bwrapArgs(planFor(config, cwd, roots, readable), command), env: {} })
    }
  })
