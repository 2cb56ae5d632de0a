/**
 * `npm run soak`: the kill -9 matrix at full length (100 iterations, local and against `baton serve`),
 * printing one line per iteration and a summary to paste into bench/RELIABILITY.md.
 *   npm run soak -- --iterations 100 --mode local|server|both
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect } from "effect"
import { matrix, type Mode, summarize } from "./Soak.js"

const arg = (name: string, fallback: string) => {
  const at = process.argv.indexOf(`--${name}`)
  return at >= 0 ? process.argv[at + 1] ?? fallback : fallback
}

const iterations = Number(arg("iterations", "100"))
const which = arg("mode", "both")
const modes: ReadonlyArray<Mode> = which === "both" ? ["local", "server"] : [which as Mode]
const options = { eventDelayMs: Number(arg("event-delay", "20")), bashMs: Number(arg("bash-ms", "300")) }

const program = Effect.gen(function*() {
  let failed = 0
  for (const mode of modes) {
    const started = Date.now()
    const results = yield* matrix(mode, iterations, options, (r, i) =>
      Console.log(`${mode} #${i + 1} target=${r.target} hit=${r.hit} requests=${r.requests} bash-runs=${r.bashRuns} ${r.durationMs} ms${r.violations.length > 0 ? `\n  VIOLATIONS: ${r.violations.join("\n  ")}` : ""}`))
    const summary = summarize(results)
    failed += summary.violations.length
    yield* Console.log(JSON.stringify({ mode, ...summary, totalMs: Date.now() - started }, null, 2))
  }
  if (failed > 0) return yield* Effect.dieMessage(`${failed} violation(s)`)
})

NodeRuntime.runMain(Effect.scoped(program))
