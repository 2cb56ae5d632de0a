/**
 * The store:
 * 1. chunk appends per second, one writer committing batches of 1, 10 and 100 chunks, and 100
 *    writers committing one chunk each at once (what group commit is for);
 * 2. pendingApprovals + backfill at 100, 10k and 100k items in one conversation: the resume path
 *    must cost the same whatever the history length (target: 100k ≤ 1.5× 100).
 * On the SQLite layer, then on PostgreSQL too when BATON_TEST_DATABASE_URL is set (in a schema of
 * its own, dropped afterwards): `scripts/with-postgres.sh npm run bench -- store`.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Layer, Redacted } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { TaskEvent } from "../src/domain/Events.js"
import { Otid, ToolCallId } from "../src/domain/Ids.js"
import type { NewItem } from "../src/domain/History.js"
import { Store } from "../src/services/Store.js"
import { layer as layerPg } from "../src/services/store/Pg.js"
import { layerSqlite } from "../src/services/store/Sqlite.js"
import { median } from "./support/Child.js"
import type { Row } from "./support/Table.js"

const chunkAppends = (batch: number, total: number) =>
  Effect.gen(function*() {
    const store = yield* Store
    const c = yield* store.createConversation({})
    const { run } = yield* store.createRun(c.id, Otid.make(`bench-${batch}`), "turn")
    let seq = 0
    const start = performance.now()
    while (seq < total) {
      const chunks = Array.from({ length: batch }, () => ({
        type: "text_delta" as const,
        content: "token ",
        run_id: run.id,
        seq: ++seq
      }))
      yield* store.commit({ conversationId: c.id, chunks })
    }
    return total / ((performance.now() - start) / 1000)
  })

/** One turn of a realistic history: 8 items, a tool call answered within the turn. */
const turn = (n: number): ReadonlyArray<TaskEvent> => {
  const id = ToolCallId.make(`call-${n}`)
  return [
    { type: "user_message", content: `question ${n}`, otid: Otid.make(`o-${n}`) },
    { type: "request_begin", attempt: 0 },
    { type: "reasoning_message", content: `thinking about ${n}` },
    { type: "tool_call", tool_call_id: id, name: "Read", arguments: `{"file_path":"src/f${n}.ts"}` },
    { type: "approval_decision", tool_call_id: id, decision: "allow", source: "rule" },
    { type: "tool_return", tool_call_id: id, status: "success", content: "x".repeat(200), otid: Otid.make(`o-${n}`) },
    { type: "assistant_message", content: `answer ${n}` },
    { type: "stop_reason", reason: "end_turn" }
  ]
}

const resumeCost = (items: number) =>
  Effect.gen(function*() {
    const store = yield* Store
    const c = yield* store.createConversation({})
    const turns = items / 8
    for (let t = 0; t < turns; t += 125) {
      const batch: Array<NewItem> = []
      for (let k = t; k < Math.min(turns, t + 125); k++) batch.push(...turn(k).map((item) => ({ item })))
      yield* store.commit({ conversationId: c.id, items: batch })
    }
    // End waiting on approval: three open calls.
    const open = ["a", "b", "c"].map((s): NewItem => ({
      item: { type: "tool_call", tool_call_id: ToolCallId.make(`open-${s}`), name: "Bash", arguments: "{}" }
    }))
    yield* store.commit({ conversationId: c.id, items: open })
    const pending = yield* store.pendingApprovals(c.id)
    const shown = yield* store.backfill(c.id)
    if (pending.length !== 3 || shown.length === 0) return yield* Effect.dieMessage("unexpected resume answer")
    const timings: Array<number> = []
    for (let i = 0; i < 300; i++) {
      const start = performance.now()
      yield* store.pendingApprovals(c.id)
      yield* store.backfill(c.id)
      timings.push(performance.now() - start)
    }
    return median(timings.slice(50))
  })

/** 100 runs at once, each committing its chunks one at a time: the commits waiting together share a transaction. */
const concurrentAppends = (writers: number, each: number) =>
  Effect.gen(function*() {
    const store = yield* Store
    const runs = yield* Effect.forEach(Array.from({ length: writers }), (_, i) =>
      Effect.flatMap(store.createConversation({}), (c) => Effect.map(store.createRun(c.id, Otid.make(`w-${i}`), "turn"), ({ run }) => ({ c, run }))))
    const start = performance.now()
    yield* Effect.forEach(runs, ({ c, run }) =>
      Effect.gen(function*() {
        for (let seq = 1; seq <= each; seq++) {
          yield* store.commit({ conversationId: c.id, chunks: [{ type: "text_delta", content: "token ", run_id: run.id, seq }] })
        }
      }), { concurrency: "unbounded" })
    return (writers * each) / ((performance.now() - start) / 1000)
  })

const rowsOf = (name: string) =>
  Effect.gen(function*() {
    const rows: Array<Row> = []
    for (const [batch, total] of [[1, 3000], [10, 20000], [100, 100000]] as const) {
      rows.push({ figure: `store (${name}): chunk appends, one writer, ${batch} chunk(s) a commit`, value: yield* chunkAppends(batch, total), unit: "chunks/s" })
    }
    rows.push({ figure: `store (${name}): chunk appends, 100 writers × 1 chunk a commit (group commit)`, value: yield* concurrentAppends(100, 300), unit: "chunks/s" })
    const costs: Array<number> = []
    for (const items of [100, 10_000, 100_000]) costs.push(yield* resumeCost(items))
    rows.push({ figure: `store (${name}): pendingApprovals + backfill, 100 items`, value: costs[0]!, unit: "ms" })
    rows.push({
      figure: `store (${name}): pendingApprovals + backfill, 100,000 items`,
      value: costs[2]!,
      unit: "ms",
      floor: { value: costs[0]!, label: "100 items" },
      target: "≤ 1.5× floor",
      met: costs[2]! <= 1.5 * costs[0]!
    })
    return rows as ReadonlyArray<Row>
  })

/** A schema of its own in the database at `url`, dropped (with everything in it) afterwards. */
const pgSchema = (url: string) =>
  Effect.gen(function*() {
    const admin = yield* PgClient.make({ url: Redacted.make(url) }).pipe(Effect.provide(Reactivity.layer), Effect.orDie)
    const schema = `baton_bench_${process.pid}`
    yield* Effect.acquireRelease(
      Effect.orDie(admin`CREATE SCHEMA ${admin(schema)}`),
      () => Effect.orDie(admin`DROP SCHEMA ${admin(schema)} CASCADE`)
    )
    const scoped = new URL(url)
    scoped.searchParams.set("options", `-c search_path=${schema}`)
    return layerPg({ url: scoped.toString() })
  })

const sqliteRows = rowsOf("SQLite").pipe(
  Effect.provide(Layer.unwrapScoped(Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-bench-store-"))),
      (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
    ),
    (dir) => layerSqlite({ filename: Path.join(dir, "bench.db") })
  )))
)

const database = process.env["BATON_TEST_DATABASE_URL"]

export const storeRows = Effect.gen(function*() {
  const rows = [...yield* sqliteRows]
  if (database !== undefined && database !== "") {
    rows.push(...yield* rowsOf("PostgreSQL").pipe(Effect.provide(Layer.unwrapScoped(pgSchema(database)))))
  }
  return rows as ReadonlyArray<Row>
}).pipe(Effect.orDie)
