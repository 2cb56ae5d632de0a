/**
 * The first install, as a user meets it:
 * - `npm ci`'s own script time: `prepare` as it is (the bundle and dist/lib) against what it was
 *   (the same, then the `.d.ts` build, which only the package needs: `prepack`);
 * - the tarball `npm pack` makes (after `prepack` built the types): its size and file count;
 * - `npm install -g` of that tarball into a fresh prefix, with the npm cache as it is: the prefix's
 *   size, the packages in it (no dev dependency may be among them), the time it took;
 * - `baton --help` from that install against `node -e 0`.
 */
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { measure, median, tempDir } from "./support/Child.js"
import type { Row } from "./support/Table.js"

const root = Path.join(import.meta.dirname, "..")
const RUNS = 11

const seconds = (f: () => void): number => {
  const t0 = performance.now()
  f()
  return (performance.now() - t0) / 1000
}

const run = (command: string, args: ReadonlyArray<string>, cwd = root): string =>
  execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 })

const wall = (args: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    await measure(args)
    const samples: Array<number> = []
    for (let i = 0; i < RUNS; i++) samples.push((await measure(args)).wallMs)
    return median(samples)
  })

export const installRows = Effect.gen(function*() {
  const tsc = Path.join(root, "node_modules", ".bin", "tsc")
  const prepare = seconds(() => run(process.execPath, ["scripts/build.mjs"]))
  const before = prepare + seconds(() => run(tsc, ["-p", "tsconfig.build.json"]))

  // dist/ is whole now (bundle, lib, types): pack it as `npm pack` would after its scripts.
  const dir = tempDir("install")
  const name = run("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", dir]).trim().split("\n").at(-1)!
  const tarball = Path.join(dir, name)
  const files = run("tar", ["-tzf", tarball]).trim().split("\n")
  const tarballKb = Fs.statSync(tarball).size / 1024

  const prefix = Path.join(dir, "global")
  const installSeconds = seconds(() => run("npm", ["install", "-g", tarball, "--prefix", prefix, "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], dir))
  const installed = run("npm", ["ls", "-g", "--prefix", prefix, "--all", "--parseable"], dir).trim().split("\n").slice(1)
  const names = new Set(installed.map((p) => p.split("node_modules/").at(-1)!))
  const pkg = JSON.parse(Fs.readFileSync(Path.join(root, "package.json"), "utf8")) as {
    readonly devDependencies: Record<string, string>
    readonly peerDependencies: Record<string, string>
  }
  const devOnly = Object.keys(pkg.devDependencies).filter((n) => !(n in pkg.peerDependencies) && names.has(n))
  const sizeMb = Number(run("du", ["-sk", prefix]).split("\t")[0]) / 1024

  const floor = yield* wall(["-e", "0"])
  const help = yield* wall([Path.join(prefix, "lib", "node_modules", "baton", "bin", "baton.js"), "--help"])
  Fs.rmSync(dir, { recursive: true, force: true })

  const rows: ReadonlyArray<Row> = [
    {
      figure: "`npm ci` scripts (`prepare`)",
      value: prepare,
      unit: "s",
      floor: { value: before, label: "with the .d.ts build, as before" },
      target: "≤ 20 s",
      met: prepare <= 20
    },
    { figure: "tarball (`npm pack`)", value: tarballKb, unit: "kB", note: `${files.length} files` },
    {
      figure: "`npm install -g` of the tarball",
      value: sizeMb,
      unit: "MB",
      target: "no dev dependency",
      met: devOnly.length === 0,
      note: `${names.size} packages, ${installSeconds.toFixed(0)} s (warm cache)${devOnly.length > 0 ? `; dev: ${devOnly.join(", ")}` : ""}`
    },
    { figure: "`baton --help` (global install)", value: help, unit: "ms", floor: { value: floor, label: "node -e 0" }, target: "≤ 1.5× floor", met: help <= 1.5 * floor }
  ]
  return rows
})
