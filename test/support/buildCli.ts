import { execFileSync } from "node:child_process"
import * as Path from "node:path"

/**
 * vitest globalSetup: every test that runs the CLI runs the bundle built from this checkout's
 * sources, never a stale one (`npm run build` is what `npm ci` runs through `prepare`).
 */
export default function setup() {
  const root = Path.join(import.meta.dirname, "..", "..")
  execFileSync(process.execPath, [Path.join(root, "scripts", "build.mjs")], { cwd: root, stdio: "inherit" })
}
