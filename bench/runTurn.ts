/**
 * `run-turn`: what each model round trip of a `baton run` tool task costs beyond start-up. The
 * loopback model asks to Read a file, then (given the result) asks again, `ROUNDS` times in all,
 * then answers; the same task with one round is the baseline, so the difference divided by the
 * extra rounds is the CPU of one round trip (a request, its answer, the tool call and its result).
 * Also the start → first request against `node -e 0`, and the peak RSS of the one-round task.
 * CPU and RSS are the process's own (resourceUsage at exit); the wall figures move with the
 * machine's load.
 */
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { measure, median, tempDir } from "./support/Child.js"
import { againstFloor, type Row } from "./support/Table.js"
import { batonRun, loopback, times } from "./stream.js"

const ROUNDS = 11
const RUNS = 5

export const runTurnRows = Effect.gen(function*() {
  const call = { name: "Read", arguments: JSON.stringify({ file_path: "notes.txt" }) }
  const one = yield* loopback({ deltas: ["The file says hello."], toolCall: call, toolRounds: 1 })
  const many = yield* loopback({ deltas: ["The file says hello."], toolCall: call, toolRounds: ROUNDS })
  const workspace = yield* Effect.acquireRelease(
    Effect.sync(() => {
      const dir = tempDir("run-turn")
      Fs.writeFileSync(Path.join(dir, "notes.txt"), "hello\n".repeat(50))
      return dir
    }),
    (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
  )
  const task = (model: typeof one) => batonRun(model, ["--json", "--approve", "allow"], workspace)
  yield* task(one)
  const short = yield* times(RUNS, task(one))
  const long = yield* times(RUNS, task(many))
  const returns = long[0]!.run.stdout.split("\n").filter((l) => l.includes("\"tool_return\"")).length
  if (returns !== ROUNDS) return yield* Effect.dieMessage(`run-turn: ${returns} tool results, expected ${ROUNDS}`)
  const nodeFloor = yield* times(7, Effect.promise(() => measure(["-e", "0"])))

  const cpuShort = median(short.map((s) => s.run.cpuMs))
  const cpuLong = median(long.map((s) => s.run.cpuMs))
  const perRound = (cpuLong - cpuShort) / (ROUNDS - 1)
  const first = median(short.map((s) => s.firstRequestMs))
  const nodeWall = median(nodeFloor.map((m) => m.wallMs))
  const rss = median(short.map((s) => s.run.maxRssMb))
  const rows: ReadonlyArray<Row> = [
    {
      figure: "run-turn: CPU per model round trip beyond start-up (`baton run`, Read then answer)",
      value: perRound,
      unit: "ms",
      target: "≤ 3 ms",
      met: perRound <= 3,
      note: `(CPU of ${ROUNDS} rounds ${cpuLong.toFixed(0)} ms − 1 round ${cpuShort.toFixed(0)} ms) ÷ ${ROUNDS - 1}; medians of ${RUNS}`
    },
    againstFloor("run-turn: start → first request", first, "ms", { value: nodeWall, label: "node -e 0" }, 2.5),
    { figure: "run-turn: peak RSS (1 round, 2 requests)", value: rss, unit: "MB", target: "≤ 120 MB", met: rss <= 120 }
  ]
  return rows
}).pipe(Effect.scoped)
