import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Path from "node:path"
import { RunId } from "../../src/domain/Ids.js"
import { Store } from "../../src/services/Store.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import { bundleEntry } from "../support/bundle.js"
import { readAll } from "../support/contract/fixtures.js"
import { rawSqlite } from "../support/sqliteFiles.js"
import type { Reported } from "../support/storeWriter.js"
import { tempDir } from "../support/tempDir.js"

const KILLS_PER_LANE = 11
const LANES = 2
const STEPS_PER_RUN = 5

/**
 * The writer child (test/support/storeWriter.ts with the real store modules), bundled once: started
 * through tsx each child spends about a second of CPU loading, which made 22 kills take 25 s on two cores.
 */
const bundleWriter = (dir: string) => bundleEntry("storeWriter.ts", dir)

/** A writer child: started early, released with "go", its committed writes parsed from stdout as they come. */
const startWriter = (writer: string, filename: string) => {
  const proc: ChildProcess = spawn(process.execPath, [writer, filename], {
    stdio: ["pipe", "pipe", "pipe"]
  })
  const reported: Array<Reported> = []
  let buffer = ""
  let stderr = ""
  let waiter: { readonly count: number; readonly resolve: () => void } | undefined
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)))
  proc.stderr!.on("data", (d: Buffer) => (stderr += d.toString()))
  proc.stdout!.on("data", (d: Buffer) => {
    buffer += d.toString()
    const lines = buffer.split("\n")
    buffer = lines.pop()!
    for (const line of lines) reported.push(JSON.parse(line) as Reported)
    if (waiter !== undefined && reported.length >= waiter.count) waiter.resolve()
  })
  return {
    reported,
    go: () => proc.stdin!.write("go\n"),
    /** Resolves once `count` commits are reported; fails if the child dies first. */
    reportedAtLeast: (count: number) =>
      Promise.race([
        new Promise<void>((resolve) => {
          if (reported.length >= count) resolve()
          else waiter = { count, resolve }
        }),
        exited.then((code) => {
          throw new Error(`writer exited (${code}) after ${reported.length} commits: ${stderr}`)
        })
      ]),
    kill: async () => {
      proc.kill("SIGKILL")
      await exited
    }
  }
}

/**
 * Reopens the file and checks everything the crash must not have broken. `finished` remembers the
 * runs already checked complete (their chunks can no longer change), so each check stays cheap.
 */
const verify = (filename: string, reported: ReadonlyArray<Reported>, finished: Map<string, number>) =>
  Effect.gen(function*() {
    const integrity = yield* Effect.scoped(
      Effect.flatMap(rawSqlite(filename), (sql) => sql.unsafe<{ readonly integrity_check: string }>("PRAGMA integrity_check"))
    )
    assert.deepStrictEqual(integrity, [{ integrity_check: "ok" }])

    yield* Effect.gen(function*() {
      const store = yield* Store
      const conversations = (yield* store.listConversations()).items
      assert.isAtMost(conversations.length, 1)
      if (conversations.length === 0) return assert.strictEqual(reported.length, 0)
      const id = conversations[0]!.id

      const items = []
      for (let page = yield* store.listItems(id, { after: 0, limit: 1000 }); page.length > 0;) {
        items.push(...page)
        page = yield* store.listItems(id, { after: page[page.length - 1]!.position, limit: 1000 })
      }
      assert.deepStrictEqual(items.map((i) => i.position), items.map((_, k) => k + 1), "positions contiguous")
      assert.strictEqual(items.length % 3, 0, "every write has its 3 items")

      const stepsOf = new Map<string, Array<number>>()
      for (let k = 0; k < items.length; k += 3) {
        const [said, called, returned] = [items[k]!.item, items[k + 1]!.item, items[k + 2]!.item]
        assert.strictEqual(said.type, "assistant_message")
        const [run, step] = (said.type === "assistant_message" ? said.content : "").split("/")
        assert.deepStrictEqual([called.type, returned.type], ["tool_call", "tool_return"])
        if (called.type === "tool_call" && returned.type === "tool_return") {
          assert.strictEqual(called.tool_call_id, `call-${run}-${step}`)
          assert.strictEqual(returned.tool_call_id, called.tool_call_id)
        }
        stepsOf.set(run!, [...(stepsOf.get(run!) ?? []), Number(step)])
      }
      assert.deepStrictEqual(yield* store.pendingApprovals(id), [])

      const lastSeqOf = new Map(finished)
      for (const [runId, steps] of stepsOf) {
        // Items and chunks of one step were one write: both there, or neither.
        assert.deepStrictEqual(steps, steps.map((_, k) => k))
        if (finished.has(runId)) continue
        const run = yield* store.getRun(RunId.make(runId))
        const chunks = yield* readAll(run.id)
        assert.deepStrictEqual(chunks.map((c) => c.seq), chunks.map((_, k) => k + 1), "seqs contiguous")
        assert.strictEqual(run.lastSeq, chunks.length)
        const deltas = chunks.flatMap((c) => (c.type === "text_delta" ? [c.content] : []))
        assert.deepStrictEqual(deltas, steps.flatMap((s) => [0, 1, 2, 3].map((k) => `${s}:${k}`)))
        const done = steps.length === STEPS_PER_RUN
        assert.strictEqual(run.status, done ? "completed" : "running")
        assert.strictEqual(chunks.at(-1)?.type === "stop_reason", done)
        lastSeqOf.set(runId, run.lastSeq)
        if (done) finished.set(runId, run.lastSeq)
      }
      assert.isAtMost((yield* store.runningRuns).length, 1)

      const byId = new Map(items.map((i) => [i.id as string, i.position]))
      for (const write of reported) {
        write.ids.forEach((itemId, k) => assert.strictEqual(byId.get(itemId), write.positions[k], "reported write present"))
        assert.isAtLeast(lastSeqOf.get(write.run) ?? 0, write.lastSeq, "reported chunks present")
      }
    }).pipe(Effect.provide(layerSqlite({ filename })))
  })

/** One file, killed KILLS_PER_LANE times; the next writer is already loading while the current one runs. */
const lane = (bundle: string, filename: string) =>
  Effect.gen(function*() {
    // Every child is killed when the lane ends, whether it passes, fails or is interrupted.
    const spawnWriter = Effect.acquireRelease(
      Effect.sync(() => startWriter(bundle, filename)),
      (w) => Effect.promise(() => w.kill())
    )
    const reported: Array<Reported> = []
    const finished = new Map<string, number>()
    let next = yield* spawnWriter
    for (let round = 0; round < KILLS_PER_LANE; round++) {
      const writer = next
      writer.go()
      if (round + 1 < KILLS_PER_LANE) next = yield* spawnWriter
      // Sometimes while it is still opening the file (or migrating it), mostly mid-loop.
      const target = Math.random() < 0.15 ? 0 : 1 + Math.floor(Math.random() * 25)
      if (target > 0) yield* Effect.promise(() => writer.reportedAtLeast(target))
      yield* Effect.promise(() => writer.kill())
      reported.push(...writer.reported)
      yield* verify(filename, reported, finished)
    }
    return reported.length
  })

describe("StoreSqlite durability", () => {
  it.live(`survives SIGKILL at random moments (${LANES} files × ${KILLS_PER_LANE} kills)`, () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const writer = yield* bundleWriter(dir)
      const counts = yield* Effect.all(
        Array.from({ length: LANES }, (_, k) => lane(writer, Path.join(dir, `lane${k}.db`))),
        { concurrency: "unbounded" }
      )
      assert.isAbove(counts.reduce((a, b) => a + b, 0), LANES * KILLS_PER_LANE)
    }).pipe(Effect.scoped), { timeout: 60_000 })
})
