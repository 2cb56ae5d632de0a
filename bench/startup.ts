/**
 * Cold start of the `baton` bin against `node -e 0`, the floor any Node CLI pays. Median of RUNS runs
 * after WARMUP, each a fresh process. Run `npm run build` first.
 *
 * - `baton --help`, `--version`: the overview page, answered before Effect loads (src/bin.ts);
 * - `baton run --help`: @effect/cli and the command definitions (what every command pays to parse);
 * - `baton sessions list`: a whole command: the command chunk, SQLite opened in a fresh home.
 *
 *   npx tsx bench/startup.ts
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

const RUNS = Number(process.env["RUNS"] ?? 21)
const WARMUP = 3
const root = Path.join(import.meta.dirname, "..")
const bin = Path.join(root, "bin", "baton.js")

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-bench-"))
const env = { ...process.env, BATON_HOME: home }

const time = (args: ReadonlyArray<string>): number => {
  for (let i = 0; i < WARMUP; i++) spawnSync(process.execPath, args, { stdio: "ignore", env })
  const samples: Array<number> = []
  for (let i = 0; i < RUNS; i++) {
    const began = process.hrtime.bigint()
    const result = spawnSync(process.execPath, args, { stdio: "ignore", env })
    samples.push(Number(process.hrtime.bigint() - began) / 1e6)
    if (result.status !== 0) throw new Error(`${args.join(" ")} exited ${result.status}`)
  }
  return median(samples)
}

const floor = time(["-e", "0"])
const rows: Array<[string, number]> = [
  ["node -e 0", floor],
  ["baton --help", time([bin, "--help"])],
  ["baton --version", time([bin, "--version"])],
  ["baton run --help", time([bin, "run", "--help"])],
  ["baton sessions list", time([bin, "sessions", "list"])]
]
Fs.rmSync(home, { recursive: true, force: true })
for (const [label, ms] of rows) console.log(`${label.padEnd(20)} ${ms.toFixed(1).padStart(7)} ms  ${(ms / floor).toFixed(2)}×`)
