import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"

/**
 * Whether bubblewrap runs here (installed, and the kernel lets it make its namespaces). CI sets
 * BATON_REQUIRE_BWRAP (.ci/run installs it), so there a missing sandbox fails instead of skipping.
 */
const probe = spawnSync("bwrap", ["--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--die-with-parent", "--", "true"], { stdio: "ignore" })
export const haveBwrap = probe.status === 0

export const requireBwrap = (file: string): boolean => {
  if (haveBwrap) return true
  if (process.env["BATON_REQUIRE_BWRAP"] !== undefined) throw new Error(`bwrap is missing or cannot run: .ci/run installs it (apt-get install -y bubblewrap)`)
  console.warn(`${file}: SKIPPED, bwrap is not installed or cannot run here (apt-get install -y bubblewrap; .ci/run does it)`)
  return false
}

/** Host pids of live processes whose command line contains `token` (seen from outside any sandbox). */
export const pidsWith = (token: string): ReadonlyArray<number> =>
  Fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).flatMap((entry) => {
    try {
      const cmdline = Fs.readFileSync(`/proc/${entry}/cmdline`, "utf8")
      const state = Fs.readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]?.[0]
      return cmdline.includes(token) && state !== "Z" && state !== "X" ? [Number(entry)] : []
    } catch {
      return []
    }
  })
