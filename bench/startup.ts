/**
 * Cold start of the `baton` bin: `baton --help` (and `--version`) against `node -e 0`, the floor any
 * Node CLI pays. Median of RUNS runs after WARMUP, each a fresh process. Run `npm run build` first.
 *
 *   npx tsx bench/startup.ts
 */
import { spawnSync } from "node:child_process"
import * as Path from "node:path"

const RUNS = Number(process.env["RUNS"] ?? 21)
const WARMUP = 3
const root = Path.join(import.meta.dirname, "..")
const bin = Path.join(root, "bin", "baton.js")

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const time = (args: ReadonlyArray<string>): number => {
  for (let i = 0; i < WARMUP; i++) spawnSync(process.execPath, args, { stdio: "ignore" })
  const samples: Array<number> = []
  for (let i = 0; i < RUNS; i++) {
    const began = process.hrtime.bigint()
    const result = spawnSync(process.execPath, args, { stdio: "ignore" })
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
  ["baton run --help", time([bin, "run", "--help"])]
]
for (const [label, ms] of rows) console.log(`${label.padEnd(18)} ${ms.toFixed(1).padStart(7)} ms  ${(ms / floor).toFixed(2)}×`)
