/**
 * `npm run bench`: builds the bin, runs every benchmark in one process run and prints one table,
 * which it also writes, with the machine's CPU, Node version and date, to bench/RESULTS.md. No
 * network: every model is a loopback server (bench/support/LoopbackModel.ts).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect } from "effect"
import { build as esbuild } from "esbuild"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { admissionRows } from "./admission.js"
import { clusterRows } from "./cluster.js"
import { conversationRows } from "./conversations.js"
import { idleConversationRows } from "./idleConversations.js"
import { installRows } from "./install.js"
import { providerRows } from "./ProviderThroughput.js"
import { remoteRows } from "./RemoteStream.js"
import { sandboxRows } from "./sandbox.js"
import { runTurnRows } from "./runTurn.js"
import { sendCostRows } from "./sendCost.js"
import { startupRows } from "./startup.js"
import { storeRows } from "./store.js"
import { streamRows } from "./stream.js"
import { toolRows } from "./tools.js"
import { machine, markdownTable, type Row } from "./support/Table.js"

const root = Path.join(import.meta.dirname, "..")
const only = process.argv.slice(2)

const build = Effect.zipRight(
  Effect.sync(() => execFileSync(process.execPath, [Path.join(root, "scripts", "build.mjs")], { stdio: "inherit" })),
  // The floor is bundled like the bin, so neither pays for loading modules one file at a time.
  Effect.promise(() =>
    esbuild({
      entryPoints: [Path.join(root, "bench", "support", "StreamFloor.ts")],
      outfile: Path.join(root, "dist", "bench", "StreamFloor.mjs"),
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      minify: true,
      logLevel: "warning"
    })
  )
)

/** In order; `npm run bench -- stream store` runs only those (and writes nothing). */
const sections: ReadonlyArray<readonly [string, Effect.Effect<ReadonlyArray<Row>>]> = [
  ["stream", streamRows],
  ["send-cost", sendCostRows],
  ["run-turn", runTurnRows],
  ["startup", startupRows],
  ["conversations", conversationRows],
  ["store", storeRows],
  ["provider", providerRows],
  ["remote", remoteRows],
  ["tools", toolRows],
  ["sandbox", sandboxRows],
  ["cluster", clusterRows],
  ["admission", admissionRows],
  ["idle-conversations", idleConversationRows],
  ["install", installRows]
]

const main = Effect.gen(function*() {
  const header = machine()
  const began = performance.now()
  // BENCH_NO_BUILD=1 measures the bin as it is (e.g. one built from an older commit).
  if (process.env["BENCH_NO_BUILD"] !== "1") yield* build
  const rows: Array<Row> = []
  for (const [name, section] of sections) {
    if (only.length > 0 && !only.includes(name)) continue
    const t0 = performance.now()
    rows.push(...(yield* section))
    process.stderr.write(`bench: ${name} done in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`)
  }
  const table = markdownTable(rows)
  const seconds = ((performance.now() - began) / 1000).toFixed(0)
  console.log(table)
  if (only.length > 0) return
  Fs.writeFileSync(
    Path.join(root, "bench", "RESULTS.md"),
    `# Benchmark results\n\nWritten by \`npm run bench\` (${seconds} s).\n\n${header}\n\n${table}\n`
  )
})

NodeRuntime.runMain(main)
