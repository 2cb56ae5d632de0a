import { assert, it } from "@effect/vitest"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Layer, Redacted } from "effect"
import { Otid } from "../../src/domain/Ids.js"
import { layer as layerPg } from "../../src/services/store/Pg.js"
import { codeOf } from "../../src/services/store/SqlFailures.js"
import { Store } from "../../src/services/Store.js"
import { freshSchema, onPostgres } from "../support/pgDatabase.js"

/** The rules the database keeps by itself, for any writer: checked with raw SQL, past the Store. */

const setup = Effect.gen(function*() {
  const { url } = yield* freshSchema
  const context = yield* Layer.build(layerPg({ url }))
  const store = yield* Effect.provide(Store, context)
  const raw = yield* PgClient.make({ url: Redacted.make(url) }).pipe(Effect.provide(Reactivity.layer), Effect.orDie)
  const conversation = yield* store.createConversation({})
  const run = (yield* store.createRun(conversation.id, Otid.make("first"), "turn")).run
  return { store, raw, conversation, run }
})

onPostgres("StorePg: the database's own rules", () => {
  it.live("a second running run of one conversation is refused by the database (runs_running)", () =>
    Effect.gen(function*() {
      const { conversation, raw } = yield* setup
      const error = yield* Effect.flip(raw`INSERT INTO runs (id, conversation_id, otid, kind, status, created_at, updated_at)
        VALUES ('run-x', ${conversation.id}, 'other', 'turn', 'running', 0, 0)`)
      assert.strictEqual(codeOf(error), "23505")
      assert.include(String((error.cause as { readonly constraint?: unknown }).constraint), "runs_running")
      // A finished one is fine.
      yield* raw`INSERT INTO runs (id, conversation_id, otid, kind, status, created_at, updated_at)
        VALUES ('run-y', ${conversation.id}, 'other', 'turn', 'completed', 0, 0)`
    }).pipe(Effect.scoped))

  it.live("a run's chunks are 1..n: a gap, a repeat or a seq below 1 is refused, a contiguous batch accepted", () =>
    Effect.gen(function*() {
      const { raw, run } = yield* setup
      const insert = (seqs: ReadonlyArray<number>) =>
        raw`INSERT INTO chunks ${raw.insert(seqs.map((seq) => ({ run_id: run.id, seq, body: "{}" })))}`
      for (const [seqs, state] of [[[2], "23514"], [[0], "23514"], [[1, 3], "23514"], [[1, 1], "23505"]] as const) {
        assert.strictEqual(codeOf(yield* Effect.flip(insert(seqs))), state, `seqs ${seqs.join(",")}`)
      }
      yield* insert([1, 2, 3])
      yield* insert([4])
      assert.strictEqual(codeOf(yield* Effect.flip(insert([4]))), "23505")
      assert.strictEqual(codeOf(yield* Effect.flip(insert([6]))), "23514")
      const rows = yield* raw<{ readonly seq: string }>`SELECT seq FROM chunks WHERE run_id = ${run.id} ORDER BY seq`
      assert.deepStrictEqual(rows.map((r) => Number(r.seq)), [1, 2, 3, 4])
    }).pipe(Effect.scoped))
})
