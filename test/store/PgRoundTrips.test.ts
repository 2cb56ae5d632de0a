import { assert, it } from "@effect/vitest"
import { Chunk, Clock, Context, Effect, Either, Layer, Stream } from "effect"
import type { Chunk as RunChunk } from "../../src/domain/Events.js"
import { Otid, type RunId } from "../../src/domain/Ids.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { Backend } from "../../src/services/Backend.js"
import { Provider } from "../../src/services/Provider.js"
import { layer as layerPg } from "../../src/services/store/Pg.js"
import { openDatabase } from "../../src/services/store/pg/Open.js"
import { makePgStore } from "../../src/services/store/pg/PgStore.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { freshSchema, onPostgres } from "../support/pgDatabase.js"
import { countRoundTrips } from "../support/pgRoundTrips.js"
import { conversationsWithRuns } from "../support/runningRuns.js"
import { liveProvider, settings } from "../support/ProviderHarness.js"

/**
 * Round trips to PostgreSQL, counted at the driver (each query is one: the statement goes out and
 * its answer comes back before the next). A common commit, and a run with its input, is one
 * statement with no BEGIN or COMMIT around it; the streamed commits of a group are one statement
 * together; a group that mixes them is one statement a commit between one BEGIN and one COMMIT,
 * no savepoints. What a refused statement ends, the group runs again commit by commit.
 */

const delta = (runId: RunId, seq: number, content: string): RunChunk => ({ type: "text_delta", content, run_id: runId, seq })

// Connections made on the real clock (see pgDatabase.ts's pgStore).
const pgStoreLayer = Layer.unwrapScoped(Effect.map(freshSchema, ({ url }) => layerPg({ url }))).pipe(Layer.orDie)

/** The store, and the database behind its back. */
const openBoth = Effect.gen(function*() {
  const { url } = yield* freshSchema
  const { sql, target } = yield* openDatabase({ url })
  return { store: yield* makePgStore(sql, target), raw: sql }
}).pipe(Effect.withClock(Clock.make()))

const openStore = Effect.map(openBoth, ({ store }) => store)

const show = (kinds: ReadonlyMap<string, number>) => JSON.stringify(Object.fromEntries(kinds))

onPostgres("PostgreSQL round trips", () => {
  it.scoped("a send through the backend makes 8 round trips at most: one for its run and input, one a commit, four reads", () =>
    Effect.gen(function*() {
      const model = yield* MockModelServer.make({ respond: () => MockModelServer.Reply.text("ok") })
      const provider = Layer.effect(Provider, liveProvider("openai-chat", settings(model.baseUrl("openai-chat"))))
      const context = yield* Layer.build(layerLocal().pipe(Layer.provideMerge(pgStoreLayer), Layer.provide(provider))).pipe(
        Effect.withClock(Clock.make())
      )
      const backend = Context.get(context, Backend)
      const conversation = yield* backend.createConversation({})
      const send = (otid: string) =>
        Stream.runCollect(backend.send(conversation.id, { messages: [{ type: "user_message", content: "hi", otid: Otid.make(otid) }] }))
      yield* send("first")
      const trips = yield* countRoundTrips
      const chunks = yield* send("second")
      assert.strictEqual([...chunks].at(-1)?.type, "stop_reason")
      const kinds = trips.byKind()
      assert.isAtMost(trips.total(), 8, show(kinds))
      for (const kind of ["BEGIN", "COMMIT", "SAVEPOINT"]) assert.strictEqual(kinds.get(kind) ?? 0, 0, show(kinds))
    }))

  it.scoped("a run with its input, a recorded commit and a lone streamed one are one round trip each", () =>
    Effect.gen(function*() {
      const store = yield* openStore
      const conversation = yield* store.createConversation({})
      const trips = yield* countRoundTrips
      const { run } = yield* store.createRun(conversation.id, Otid.make("o"), "turn", {
        input: () => ({ items: [{ item: { type: "user_message", content: "hi", otid: Otid.make("u") } }] })
      })
      assert.strictEqual(trips.total(), 1, show(trips.byKind()))
      yield* store.commit({ conversationId: conversation.id, chunks: [delta(run.id, 1, "a"), delta(run.id, 2, "b")] })
      assert.strictEqual(trips.total(), 2, show(trips.byKind()))
      const recorded = yield* store.commit({
        conversationId: conversation.id,
        items: [{ item: { type: "assistant_message", content: "ab" } }],
        chunks: [delta(run.id, 3, "!")],
        finishRun: { runId: run.id, status: "completed", stopReason: "end_turn" },
        usage: [{
          conversation_id: conversation.id,
          run_id: run.id,
          purpose: "turn",
          model: "m",
          input_tokens: 3,
          output_tokens: 2,
          cache_read_tokens: 0,
          cache_write_tokens: 0,
          created_at: 1
        }]
      })
      assert.strictEqual(trips.total(), 3, show(trips.byKind()))
      // What the one statement wrote, read back.
      assert.deepStrictEqual(recorded.map((s) => s.position), [2])
      assert.deepStrictEqual((yield* store.listItems(conversation.id)).map((s) => s.item.type), ["user_message", "assistant_message"])
      const finished = yield* store.getRun(run.id)
      assert.deepStrictEqual([finished.status, finished.stopReason, finished.lastSeq], ["completed", "end_turn", 3])
      assert.strictEqual(Chunk.size(yield* Stream.runCollect(store.readChunks(run.id, 0))), 3)
      assert.strictEqual((yield* store.usage({ conversationId: conversation.id })).length, 1)
      // The same otid again: its run, nothing written.
      const again = yield* store.createRun(conversation.id, Otid.make("o"), "turn")
      assert.isFalse(again.created)
      assert.strictEqual(again.run.id, run.id)
    }))

  it.scoped("streamed commits waiting together are one statement, no transaction round trips", () =>
    Effect.gen(function*() {
      const store = yield* openStore
      const runs = yield* conversationsWithRuns(store, 20)
      const trips = yield* countRoundTrips
      yield* Effect.all(runs.map(({ conversation, run }) => store.commit({ conversationId: conversation, chunks: [delta(run, 1, "a"), delta(run, 2, "b")] })), {
        concurrency: "unbounded"
      })
      // One group: the idle writer wakes with the first commit and takes the others queued with it.
      assert.strictEqual(trips.total(), 1, show(trips.byKind()))
      assert.deepStrictEqual([...trips.byKind().keys()], ["WITH"])
      for (const { run } of runs) assert.strictEqual((yield* store.getRun(run)).lastSeq, 2)
    }))

  it.scoped("a group mixing streamed and recorded commits takes no savepoints; a refused statement leaves the others' writes standing", () =>
    Effect.gen(function*() {
      const store = yield* openStore
      const runs = yield* conversationsWithRuns(store, 6)
      const trips = yield* countRoundTrips
      const streamed = runs.slice(0, 4).map(({ conversation, run }) => store.commit({ conversationId: conversation, chunks: [delta(run, 1, "a")] }))
      const recorded = runs.slice(4).map(({ conversation }) =>
        store.commit({ conversationId: conversation, items: [{ item: { type: "assistant_message", content: "x" } }] }))
      const gap = store.commit({ conversationId: runs[0]!.conversation, chunks: [delta(runs[0]!.run, 9, "x")] })
      const outcomes = yield* Effect.all([...streamed, ...recorded, gap].map(Effect.either), { concurrency: "unbounded" })
      assert.deepStrictEqual(outcomes.map(Either.isRight), [true, true, true, true, true, true, false])
      const kinds = trips.byKind()
      assert.strictEqual(kinds.get("SAVEPOINT") ?? 0, 0, show(kinds))
      // Two groups at most, each BEGIN … COMMIT around a statement a recorded commit and one for the streamed ones;
      // the gap's refusal is read back (one SELECT).
      assert.isAtMost(trips.total(), 2 * 2 + 2 + 2 + 1, show(kinds))

    }))

  it.scoped("a statement the database refuses inside a group's transaction: that commit fails alone, the others are written", () =>
    Effect.gen(function*() {
      const { raw, store } = yield* openBoth
      const runs = yield* conversationsWithRuns(store, 6)
      // Another writer left a chunk the run's row does not count: the database refuses seq 1 of that run.
      yield* Effect.orDie(raw`INSERT INTO chunks (run_id, seq, body) VALUES (${runs[2]!.run}, 1, ${JSON.stringify(delta(runs[2]!.run, 1, "z"))})`)
      const streamed = runs.slice(0, 4).map(({ conversation, run }) => store.commit({ conversationId: conversation, chunks: [delta(run, 1, "a")] }))
      const recorded = runs.slice(4).map(({ conversation }) =>
        store.commit({ conversationId: conversation, items: [{ item: { type: "assistant_message", content: "x" } }] }))
      const outcomes = yield* Effect.all([...streamed, ...recorded].map(Effect.either), { concurrency: "unbounded" })
      assert.deepStrictEqual(outcomes.map(Either.isRight), [true, true, false, true, true, true])
      assert.isTrue(Either.isLeft(outcomes[2]!) && outcomes[2].left._tag === "StoreError")
      for (const { run } of runs.slice(0, 4).filter((_, i) => i !== 2)) {
        assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Stream.runCollect(store.readChunks(run, 0))), [delta(run, 1, "a")])
      }
      assert.strictEqual((yield* store.getRun(runs[2]!.run)).lastSeq, 0)
      for (const { conversation } of runs.slice(4)) {
        assert.deepStrictEqual((yield* store.listItems(conversation)).map((i) => i.item.type), ["assistant_message"])
      }
    }))
})
