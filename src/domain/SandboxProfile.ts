import * as Path from "./PosixPath.js"

/**
 * What one sandboxed command may see and touch, and how each platform is told: bubblewrap's
 * arguments on Linux, a Seatbelt profile for macOS's `sandbox-exec`. Pure: the caller resolves the
 * paths (real paths, existing ones only) and says which hidden ones are directories.
 */
export interface MountPlan {
  readonly mode: "workspace-write" | "read-only"
  readonly network: boolean
  /** The command's working directory (the workspace). */
  readonly cwd: string
  /** Writable directories, real and existing (empty in read-only mode). */
  readonly writable: ReadonlyArray<string>
  /**
   * Paths outside the writable roots the command itself needs (an MCP server's own script and the
   * project around it): under the private /tmp they are shown again, read-only, like a workspace's.
   */
  readonly readable?: ReadonlyArray<string>
  readonly hidden: ReadonlyArray<{ readonly path: string; readonly directory: boolean }>
  /** Running as root: bubblewrap would keep every capability (a remount could undo the sandbox) unless dropped. */
  readonly privileged: boolean
}

const within = (path: string, root: string): boolean => path === root || path.startsWith(root === "/" ? "/" : `${root}/`)

const TMP = "/tmp"

/**
 * Under the private /tmp of workspace-write, the host's /tmp is gone; the top directory of each
 * writable root under /tmp is shown again read-only, so the rest of the tree around a workspace in
 * /tmp reads as it does outside and refuses writes as the rest of the file system does.
 */
const tmpAncestors = (shown: ReadonlyArray<string>, writable: ReadonlyArray<string>): ReadonlyArray<string> =>
  [...new Set(shown.filter((root) => within(root, TMP) && root !== TMP).map((root) => `${TMP}/${root.slice(TMP.length + 1).split("/")[0]!}`))]
    .filter((top) => !writable.includes(top))

/** The bubblewrap command line that runs `command` (argv) inside the plan. */
export const bwrapArgs = (plan: MountPlan, command: ReadonlyArray<string>): ReadonlyArray<string> => {
  const writable = plan.mode === "workspace-write" ? plan.writable : []
  const privateTmp = plan.mode === "workspace-write"
  const shownTmp = privateTmp ? tmpAncestors([...writable, ...(plan.readable ?? [])], writable) : []
  // A path under the private /tmp that is not shown again does not exist inside: nothing to hide.
  const visible = (path: string) => !privateTmp || !within(path, TMP) || shownTmp.some((top) => within(path, top))
  const hide = (h: MountPlan["hidden"][number]) => (h.directory ? ["--tmpfs", h.path] : ["--ro-bind", "/dev/null", h.path])
  const hidden = plan.hidden.filter((h) => visible(h.path))
  const insideWritable = (path: string) => writable.some((root) => within(path, root))
  return [
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    ...(privateTmp ? ["--tmpfs", TMP, ...shownTmp.flatMap((top) => ["--ro-bind", top, top])] : []),
    // Hidden before the writable binds, so a workspace inside a hidden directory is still mounted;
    // the hidden ones inside a writable root (a workspace's .env) after them, so they stay hidden.
    ...hidden.filter((h) => !insideWritable(h.path)).flatMap(hide),
    ...writable.flatMap((root) => ["--bind", root, root]),
    ...hidden.filter((h) => insideWritable(h.path)).flatMap(hide),
    // The empty directories that hide a secret cannot be written either.
    ...hidden.filter((h) => h.directory).flatMap((h) => ["--remount-ro", h.path]),
    "--unshare-pid",
    "--unshare-ipc",
    ...(plan.network ? [] : ["--unshare-net"]),
    "--die-with-parent",
    ...(plan.privileged ? ["--cap-drop", "ALL"] : []),
    ...(privateTmp ? ["--setenv", "TMPDIR", TMP] : []),
    "--chdir", plan.cwd,
    "--",
    ...command
  ]
}

/** A string literal in Seatbelt's Scheme-like language. */
const literal = (text: string): string => `"${text.replace(/\\/g, "\\\\").replace(/"/g, "\\\"")}"`

/**
 * The Seatbelt profile `sandbox-exec -p PROFILE` runs the command under on macOS: reads allowed but
 * for the hidden paths, writes only under the writable roots, the per-command temp dir and the
 * terminal devices, network only when allowed. `tmp` is the private temp dir (TMPDIR inside).
 */
export const seatbeltProfile = (plan: MountPlan, tmp: string): string => {
  const writable = plan.mode === "workspace-write" ? [...plan.writable, tmp] : []
  const hidden = plan.hidden.map((h) => (h.directory ? `(subpath ${literal(h.path)})` : `(literal ${literal(h.path)})`))
  return [
    "(version 1)",
    "(deny default)",
    "(allow process-exec)",
    "(allow process-fork)",
    "(allow signal (target same-sandbox))",
    "(allow process-info* (target same-sandbox))",
    "(allow sysctl-read)",
    "(allow mach-lookup)",
    "(allow ipc-posix-shm-read-data)",
    "(allow file-read*)",
    ...(hidden.length > 0 ? [`(deny file-read* file-write* ${hidden.join(" ")})`] : []),
    `(allow file-write* (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/fd/[0-9]+$")${
      writable.map((root) => ` (subpath ${literal(Path.normalize(root))})`).join("")
    })`,
    // Later rules win in Seatbelt: the hidden paths stay unwritable inside a writable root.
    ...(hidden.length > 0 ? [`(deny file-write* ${hidden.join(" ")})`] : []),
    ...(plan.network ? ["(allow network*)", "(allow system-socket)"] : ["(allow network* (remote unix-socket))"])
  ].join("\n") + "\n"
}
