/**
 * `npm run soak`: the kill -9 matrix at full length (100 iterations, local and against `baton serve`),
 * printing one line per iteration, then the figures as a Markdown table for bench/RELIABILITY.md.
 *   npm run soak -- --iterations 100 --mode local|server|both
 * Exits non-zero on any violation, or when a kill point was never hit. With SOAK_DUMP=1, an iteration
 * that took more than 8 model requests prints their shape and the first client's output.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect } from "effect"
import * as Os from "node:os"
import { type Hit, matrix, type Mode, type Summary, summarize } from "./Soak.js"

const arg = (name: string, fallback: string) => {
  const at = process.argv.indexOf(`--${name}`)
  return at >= 0 ? process.argv[at + 1] ?? fallback : fallback
}

const iterations = Number(arg("iterations", "100"))
const which = arg("mode", "both")
const modes: ReadonlyArray<Mode> = which === "both" ? ["local", "server"] : [which as Mode]
const options = { eventDelayMs: Number(arg("event-delay", "20")), bashMs: Number(arg("bash-ms", "300")) }

const KILL_POINTS: ReadonlyArray<Hit> = ["streaming", "approval", "tool_running", "after_finish", "compaction"]

const table = (rows: ReadonlyArray<{ readonly mode: Mode; readonly summary: Summary; readonly totalMs: number }>) =>
  [
    `| | ${rows.map((r) => (r.mode === "local" ? "`baton run` killed" : "`baton serve` killed")).join(" | ")} |`,
    `|---|${rows.map(() => "---:").join("|")}|`,
    `| iterations | ${rows.map((r) => r.summary.iterations).join(" | ")} |`,
    ...KILL_POINTS.map((hit) => `| kill while ${hit.replace("_", " ")} | ${rows.map((r) => r.summary.byHit[hit] ?? 0).join(" | ")} |`),
    `| kill elsewhere (between runs, or after the answer) | ${rows.map((r) => (r.summary.byHit["between"] ?? 0) + (r.summary.byHit["finished"] ?? 0)).join(" | ")} |`,
    `| Bash calls run again (never committed: killed mid-run) | ${rows.map((r) => r.summary.reRuns).join(" | ")} |`,
    `| violations | ${rows.map((r) => r.summary.violations.length).join(" | ")} |`,
    `| mean iteration | ${rows.map((r) => `${(r.summary.meanMs / 1000).toFixed(1)} s`).join(" | ")} |`,
    `| total | ${rows.map((r) => `${Math.round(r.totalMs / 1000)} s`).join(" | ")} |`
  ].join("\n")

const program = Effect.gen(function*() {
  const rows: Array<{ readonly mode: Mode; readonly summary: Summary; readonly totalMs: number }> = []
  for (const mode of modes) {
    const started = Date.now()
    const results = yield* matrix(mode, iterations, options, (r, i) =>
      Console.log(`${mode} #${i + 1} target=${r.target} hit=${r.hit} requests=${r.requests} bash-runs=${r.bashRuns} ${r.durationMs} ms${r.violations.length > 0 ? `\n  VIOLATIONS: ${r.violations.join("\n  ")}` : ""}`))
    rows.push({ mode, summary: summarize(results), totalMs: Date.now() - started })
  }
  yield* Console.log(`\n${new Date().toISOString()} · ${Os.cpus().length} cores · load ${Os.loadavg().map((l) => l.toFixed(1)).join(" ")} · event delay ${options.eventDelayMs} ms · Bash ${options.bashMs} ms\n`)
  yield* Console.log(table(rows))
  const problems = rows.flatMap((r) => [
    ...r.summary.violations,
    ...KILL_POINTS.filter((hit) => (r.summary.byHit[hit] ?? 0) === 0).map((hit) => `${r.mode}: no kill while ${hit}`)
  ])
  if (problems.length > 0) return yield* Effect.dieMessage(`${problems.length} problem(s):\n${problems.join("\n")}`)
})

NodeRuntime.runMain(Effect.scoped(program))
