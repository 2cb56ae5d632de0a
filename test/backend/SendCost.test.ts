import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Stream } from "effect"
import { createRequire } from "node:module"
import * as Path from "node:path"
import type { NewItem } from "../../src/domain/History.js"
import { type ConversationId, Otid } from "../../src/domain/Ids.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { Backend } from "../../src/services/Backend.js"
import { Provider } from "../../src/services/Provider.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import { Store } from "../../src/services/Store.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { liveProvider, settings } from "../support/ProviderHarness.js"
import { tempDir } from "../support/tempDir.js"

/**
 * What one send costs must not grow with the conversation: beyond the request body itself (as long
 * as the context), a send reads what is new since the last one, not the whole history again. The
 * Store is the real SQLite store, wrapped to count the reads a send makes and the items (or chunks)
 * they bring back; the model is a real HTTP server answering each request with one short text.
 */

interface Tally {
  reads: number
  items: number
}

const countingStore = (filename: string, tally: Tally) =>
  Layer.effect(Store, Effect.map(Store, (inner) => {
    const counted = <A, E>(effect: Effect.Effect<ReadonlyArray<A>, E>) =>
      Effect.tap(effect, (rows) => Effect.sync(() => {
        tally.reads++
        tally.items += rows.length
      }))
    return Store.of({
      ...inner,
      listItems: (id, query) => counted(inner.listItems(id, query)),
      modelContext: (id) => counted(inner.modelContext(id)),
      segmentItems: (id, segment) => counted(inner.segmentItems(id, segment)),
      currentSegmentItems: (id) =>
        Effect.tap(inner.currentSegmentItems(id), (current) => Effect.sync(() => {
          tally.reads++
          tally.items += current.items.length
        })),
      toolReturns: (id, ids) => counted(inner.toolReturns(id, ids)),
      pendingApprovals: (id) => counted(inner.pendingApprovals(id)),
      backfill: (id, options) => counted(inner.backfill(id, options)),
      heldSteering: (id) => counted(inner.heldSteering(id)),
      readChunks: (runId, after) =>
        Stream.mapChunks(inner.readChunks(runId, after), (chunk) => {
          tally.reads++
          tally.items += chunk.length
          return chunk
        })
    })
  })).pipe(Layer.provide(layerSqlite({ filename })))

/** better-sqlite3's Database, as far as counting its statements needs it (the package has no types here). */
type Prepare = (this: unknown, source: string) => Record<string, unknown>
const Database = createRequire(import.meta.url)("better-sqlite3") as { prototype: { prepare: Prepare } }

/** `pairs` user/assistant exchanges recorded as history, as earlier turns would have left them. */
const history = (pairs: number): ReadonlyArray<NewItem> =>
  Array.from({ length: pairs }, (_, i): ReadonlyArray<NewItem> => [
    { item: { type: "user_message", content: `question ${i}`, otid: Otid.make(`h-${i}`) } },
    { item: { type: "assistant_message", content: `answer ${i}` } }
  ]).flat()

describe("the cost of a send", () => {
  it.scoped("reads the same, and as few, items on a conversation of 4 items as on one of 2,000", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const model = yield* MockModelServer.make({ respond: () => MockModelServer.Reply.text("ok") })
      const tally: Tally = { reads: 0, items: 0 }
      const provider = Layer.effect(Provider, liveProvider("openai-chat", settings(model.baseUrl("openai-chat"))))
      const context = yield* Layer.build(
        layerLocal().pipe(Layer.provideMerge(countingStore(Path.join(dir, "baton.db"), tally)), Layer.provide(provider))
      )
      const backend = Context.get(context, Backend)
      const store = Context.get(context, Store)
      let sent = 0
      const send = (id: ConversationId) =>
        Stream.runCollect(backend.send(id, { messages: [{ type: "user_message", content: "hi", otid: Otid.make(`s-${++sent}`) }] }))

      /** The reads of the second send on a conversation with this much history (the first one may load it). */
      const secondSend = (pairs: number) =>
        Effect.gen(function*() {
          const conversation = yield* store.createConversation({})
          yield* store.commit({ conversationId: conversation.id, items: history(pairs) })
          yield* send(conversation.id)
          tally.reads = 0
          tally.items = 0
          const chunks = yield* send(conversation.id)
          assert.strictEqual([...chunks].at(-1)?.type, "stop_reason")
          return { ...tally }
        })

      const short = yield* secondSend(2)
      const long = yield* secondSend(1_000)
      assert.deepStrictEqual(long, short, "a send on a long conversation read more than one on a short one")
      // What a send reads is what it added: its input, the model's answer, its run's events.
      assert.isAtMost(short.items, 20)
      assert.strictEqual((yield* model.requests).length, 4)
    }))

  it.scoped("a send makes 29 SQL statements at most on SQLite in 4 transactions, none outside them: each check is folded into a statement that needs it (a run's seq check into its stamp), the input recorded in its run's own transaction, the usage in its request_end's", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const model = yield* MockModelServer.make({ respond: () => MockModelServer.Reply.text("ok") })
      // Every statement better-sqlite3 runs, counted where it runs (prepared ones at each call).
      const statements: Array<string> = []
      const prepare = Database.prototype.prepare
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          Database.prototype.prepare = function(this: unknown, source: string) {
            const statement = prepare.call(this, source)
            for (const method of ["run", "all", "get", "iterate"] as const) {
              const call = statement[method] as (...args: Array<unknown>) => unknown
              Object.defineProperty(statement, method, {
                value: (...args: Array<unknown>) => (statements.push(source), call.apply(statement, args))
              })
            }
            return statement
          }
        }),
        () => Effect.sync(() => (Database.prototype.prepare = prepare))
      )
      const provider = Layer.effect(Provider, liveProvider("openai-chat", settings(model.baseUrl("openai-chat"))))
      const context = yield* Layer.build(
        layerLocal().pipe(Layer.provideMerge(layerSqlite({ filename: Path.join(dir, "baton.db") })), Layer.provide(provider))
      )
      const backend = Context.get(context, Backend)
      const conversation = yield* backend.createConversation({})
      const send = (otid: string) =>
        Stream.runCollect(backend.send(conversation.id, { messages: [{ type: "user_message", content: "hi", otid: Otid.make(otid) }] }))
      yield* send("first")
      statements.length = 0
      const chunks = yield* send("second")
      assert.strictEqual([...chunks].at(-1)?.type, "stop_reason")
      const begins = statements.filter((s) => /^\s*BEGIN/i.test(s)).length
      assert.isAtMost(statements.length, 29, statements.join("\n"))
      assert.isAtMost(begins, 4, statements.join("\n"))
      // The request's usage is still recorded, inside the run's last transaction: no commit (and fsync) of its own.
      const usage = statements.findIndex((s) => /INSERT INTO usage/i.test(s))
      assert.isAbove(usage, statements.findLastIndex((s) => /^\s*BEGIN/i.test(s)), statements.join("\n"))
      assert.isBelow(usage, statements.findLastIndex((s) => /^\s*COMMIT/i.test(s)), statements.join("\n"))
    }))
})
