/**
 * Cold start of the `baton` bin against `node -e 0`, the floor any Node CLI pays: the median of RUNS
 * fresh processes each (after a warm-up), started the way stream.ts starts them.
 * - `baton --help`, `--version`: the overview page, answered before Effect loads (src/bin.ts);
 * - `baton run --help`: @effect/cli and the command definitions (what every command pays to parse);
 * - `baton sessions list`: a whole command: the command chunk, SQLite opened in a fresh home.
 */
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { measure, median, tempDir } from "./support/Child.js"
import type { Row } from "./support/Table.js"

const RUNS = 11
const bin = Path.join(import.meta.dirname, "..", "dist", "bin", "baton.js")

const time = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.promise(async () => {
    await measure(args, { env })
    const samples: Array<number> = []
    for (let i = 0; i < RUNS; i++) {
      const run = await measure(args, { env })
      if (run.code !== 0) throw new Error(`${args.join(" ")} exited ${run.code}: ${run.stderr.slice(0, 500)}`)
      samples.push(run.wallMs)
    }
    return median(samples)
  })

export const startupRows = Effect.gen(function*() {
  const home = tempDir("startup")
  const env = { BATON_HOME: home }
  const floor = yield* time(["-e", "0"], env)
  const node = { value: floor, label: "node -e 0" }
  const help = yield* time([bin, "--help"], env)
  const rows: ReadonlyArray<Row> = [
    { figure: "`baton --help`", value: help, unit: "ms", floor: node, target: "≤ 1.5× floor", met: help <= 1.5 * floor },
    { figure: "`baton --version`", value: yield* time([bin, "--version"], env), unit: "ms", floor: node },
    { figure: "`baton run --help` (the CLI parses)", value: yield* time([bin, "run", "--help"], env), unit: "ms", floor: node },
    { figure: "`baton sessions list` (fresh SQLite home)", value: yield* time([bin, "sessions", "list"], env), unit: "ms", floor: node }
  ]
  Fs.rmSync(home, { recursive: true, force: true })
  return rows
})
