/**
 * The sandbox's cost per Bash call: `true` through the ToolExecutor inside bubblewrap
 * (workspace-write, no network) against the same call unsandboxed (the floor), median of 40 each,
 * interleaved so the shared machine's noise falls on both. Without bubblewrap the row says so.
 */
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { ToolCallId } from "../src/domain/Ids.js"
import { makeToolExecutor } from "../src/services/tools/Executor.js"
import { awaitResult, type ToolExecutor } from "../src/services/ToolExecutor.js"
import { median } from "./support/Child.js"
import type { Row } from "./support/Table.js"

let n = 0

const bashTrue = (executor: ToolExecutor["Type"]) =>
  Effect.scoped(Effect.gen(function*() {
    const call = { type: "tool_call" as const, tool_call_id: ToolCallId.make(`s${++n}`), name: "Bash", arguments: "{\"command\":\"true\"}" }
    const t0 = performance.now()
    const result = yield* awaitResult(call, yield* executor.start(call))
    if (result.status !== "success") return yield* Effect.die(new Error(`Bash true failed: ${result.output}`))
    return performance.now() - t0
  }))

export const sandboxRows = Effect.gen(function*() {
  const workspace = Fs.realpathSync(Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-bench-sandbox-")))
  const plain = yield* makeToolExecutor({ workspace })
  const boxed = yield* makeToolExecutor({ workspace, sandbox: { mode: "workspace-write" } })
  if (boxed.sandbox?.active !== true) {
    Fs.rmSync(workspace, { recursive: true, force: true })
    return [{ figure: "sandbox: per Bash call, `true` in bubblewrap", value: Number.NaN, unit: "ms", note: boxed.sandbox?.unavailable ?? "no sandbox" }]
  }
  for (let i = 0; i < 5; i++) yield* Effect.zip(bashTrue(plain), bashTrue(boxed)) // warm-up
  const without: Array<number> = []
  const within: Array<number> = []
  for (let i = 0; i < 40; i++) {
    without.push(yield* bashTrue(plain))
    within.push(yield* bashTrue(boxed))
  }
  Fs.rmSync(workspace, { recursive: true, force: true })
  const rows: ReadonlyArray<Row> = [{
    figure: "sandbox: per Bash call, `true` in bubblewrap (workspace-write)",
    value: median(within),
    unit: "ms",
    floor: { value: median(without), label: "the same call unsandboxed" },
    note: `+${(median(within) - median(without)).toFixed(1)} ms per call`
  }]
  return rows
}).pipe(Effect.orDie)
