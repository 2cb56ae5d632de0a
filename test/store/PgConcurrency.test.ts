import { assert, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import { Otid, RunId } from "../../src/domain/Ids.js"
import { layer as layerPg } from "../../src/services/store/Pg.js"
import { Store } from "../../src/services/Store.js"
import { bundleEntry } from "../support/bundle.js"
import { readAll } from "../support/contract/fixtures.js"
import { freshSchema, onPostgres } from "../support/pgDatabase.js"
import type { Outcome } from "../support/pgWriter.js"
import { tempDir } from "../support/tempDir.js"

const ROUNDS = 40

/** A writer child (test/support/pgWriter.ts, bundled): released with "go", its outcomes parsed from stdout. */
const startWriter = (bundle: string, args: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const proc = spawn(process.execPath, [bundle, ...args], { stdio: ["pipe", "pipe", "pipe"] })
      const outcomes: Array<Outcome> = []
      let buffer = ""
      let stderr = ""
      proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
      proc.stdout.on("data", (d: Buffer) => {
        buffer += d.toString()
        const lines = buffer.split("\n")
        buffer = lines.pop()!
        for (const line of lines) outcomes.push(JSON.parse(line) as Outcome)
      })
      const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)))
      return { proc, outcomes, exited, stderr: () => stderr }
    }),
    (w) => Effect.sync(() => w.proc.kill("SIGKILL"))
  )

onPostgres("StorePg: two processes, one database", () =>
  it.live("two processes writing one conversation: one running run at a time, every run's seqs contiguous", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const bundle = yield* bundleEntry("pgWriter.ts", dir)
      const { url } = yield* freshSchema
      const store = Layer.build(layerPg({ url }))
      const ids = yield* Effect.gen(function*() {
        const s = yield* Store
        const runs = yield* s.createConversation({}, { title: "runs" })
        const shared = yield* s.createConversation({}, { title: "shared run" })
        const long = (yield* s.createRun(shared.id, Otid.make("long"), "turn")).run
        return { runs: runs.id, shared: shared.id, long: long.id }
      }).pipe(Effect.provide(yield* store))

      const writers = yield* Effect.forEach(["a", "b"], (label) =>
        startWriter(bundle, [url, ids.runs, ids.long, ids.shared, label, String(ROUNDS)]))
      for (const w of writers) w.proc.stdin.end("go\n")
      const codes = yield* Effect.promise(() => Promise.all(writers.map((w) => w.exited)))
      assert.deepStrictEqual(codes, [0, 0], writers.map((w) => w.stderr()).join("\n"))
      const outcomes = writers.map((w) => w.outcomes)
      for (const o of outcomes) assert.deepStrictEqual(o.at(-1), { done: true })

      yield* Effect.gen(function*() {
        const s = yield* Store
        // Each writer started a run only when none was running: in the conversation's one order,
        // every start is followed by its own end before any other start.
        const items = yield* s.listItems(ids.runs, { limit: 1000 })
        const marks = items.map((i) => (i.item.type === "assistant_message" ? i.item.content : i.item.type))
        const ran = outcomes.flatMap((o) => o.flatMap((x) => ("ran" in x ? [x.ran] : [])))
        const order: Array<string> = []
        for (let k = 0; k < marks.length; k += 2) {
          const run = marks[k]!.slice("start:".length)
          assert.deepStrictEqual([marks[k], marks[k + 1]], [`start:${run}`, `end:${run}`], `position ${k + 1}`)
          order.push(run)
        }
        assert.deepStrictEqual([...order].sort(), [...ran].sort())
        for (const run of ran) {
          assert.deepStrictEqual((yield* readAll(RunId.make(run))).map((c) => c.seq), [1, 2, 3, 4])
        }
        const busy = outcomes.flat().filter((x) => "busy" in x).length
        assert.isTrue(outcomes.every((o) => o.some((x) => "ran" in x)), "both processes ran runs")
        assert.strictEqual(ran.length + busy, 2 * ROUNDS)
        assert.isAbove(busy, 0, "the processes contended for the conversation")
        assert.deepStrictEqual(yield* s.runningRuns, [yield* s.getRun(ids.long)])

        // The long run: both appended to it; each append that succeeded holds exactly its seqs,
        // and the run's chunks are 1..n, n four per success, with no gap and no repeat.
        const chunks = yield* readAll(ids.long)
        const appended = outcomes.map((o) => o.flatMap((x) => ("appended" in x ? [x.appended] : [])))
        assert.deepStrictEqual(chunks.map((c) => c.seq), chunks.map((_, k) => k + 1))
        assert.strictEqual(chunks.length, 4 * appended.flat().length)
        appended.forEach((batches, w) => {
          for (const seq of batches.flat()) {
            const chunk = chunks[seq - 1]!
            assert.strictEqual(chunk.type === "text_delta" && chunk.content, `${"ab"[w]}:${seq}`)
          }
        })
        assert.isTrue(appended.every((a) => a.length > 0), "both processes appended")
        assert.strictEqual((yield* s.getRun(ids.long)).lastSeq, chunks.length)
      }).pipe(Effect.provide(yield* store))
    }).pipe(Effect.scoped), { timeout: 60_000 }))
