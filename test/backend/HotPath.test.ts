import { assert, describe, it } from "@effect/vitest"
import { Chunk as EChunk, Context, Effect, Layer, Option, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Chunk, TaskEvent } from "../../src/domain/Events.js"
import { Otid } from "../../src/domain/Ids.js"
import type { Write } from "../../src/domain/History.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { LIVE_CAPACITY, makeRunLog } from "../../src/programs/backend/RunLog.js"
import { open } from "../../src/programs/session/Session.js"
import { Backend } from "../../src/services/Backend.js"
import { Provider } from "../../src/services/Provider.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import { Store } from "../../src/services/Store.js"
import { ToolExecutor } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { renderChat } from "../support/MockWire.js"
import { liveProvider, settings } from "../support/ProviderHarness.js"
import { tempDir } from "../support/tempDir.js"

/**
 * DESIGN "The hot path": what one network read brings is committed in one transaction, then
 * published; nobody sees a chunk before its commit; a lone chunk is committed at once (no timer).
 * The model is a real HTTP server writing its answer in bursts, each burst one socket write; the
 * Store is the real SQLite store, wrapped to count commits (one commit = one transaction).
 */

const BURST = 50
const deltas = Array.from({ length: BURST + 1 }, (_, i) => `d${i} `)

interface Signal {
  readonly promise: Promise<void>
  readonly resolve: () => void
}

const signal = (): Signal => {
  let resolve = () => {}
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

/**
 * The SQLite store, with every commit recorded once it has returned (its transaction is over). Each
 * commit first lets every other fiber run for a while, so a chunk published before (or while) it
 * commits would reach the reader inside that window.
 */
const countingStore = (filename: string, onCommit: (write: Write) => void) =>
  Layer.effect(Store, Effect.map(Store, (inner) =>
    Store.of({
      ...inner,
      commit: (write) =>
        Effect.repeatN(Effect.yieldNow(), 50).pipe(
          Effect.zipRight(inner.commit(write)),
          Effect.tap(() => Effect.sync(() => onCommit(write)))
        )
    }))).pipe(Layer.provide(layerSqlite({ filename })))

const deltaCount = (chunks: Iterable<TaskEvent>) => Array.from(chunks).filter((c) => c.type === "text_delta").length

describe("the hot path", () => {
  it.scoped("a read's chunks are committed in one transaction, a lone chunk at once, and nobody sees a chunk before its commit", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const workspace = Path.join(dir, "ws")
      Fs.mkdirSync(workspace)
      // The model writes: head + 50 deltas at once; then, once those are committed, one lone delta;
      // once that is committed, the rest. Were the run to wait for more before committing, it would wait forever.
      const burstCommitted = signal()
      const loneCommitted = signal()
      const events = renderChat({ text: deltas }, "m")
      const model = yield* MockModelServer.make({
        replies: [MockModelServer.Reply.sse(events, { writes: [{ events: 1 + BURST }, { events: 1, after: burstCommitted.promise }, { events: events.length - BURST - 2, after: loneCommitted.promise }] })]
      })

      const commits: Array<number> = []
      let committed = 0
      const store = countingStore(Path.join(dir, "baton.db"), (write) => {
        const chunks = write.chunks ?? []
        for (const chunk of chunks) committed = Math.max(committed, chunk.seq)
        const n = deltaCount(chunks)
        if (n === 0) return
        commits.push(n)
        if (commits.length === 1) burstCommitted.resolve()
        if (commits.length === 2) loneCommitted.resolve()
      })
      const provider = Layer.effect(Provider, liveProvider("openai-chat", settings(model.baseUrl("openai-chat"))))
      const context = yield* Layer.build(layerLocal().pipe(Layer.provide([store, provider])))
      const executor = yield* makeToolExecutor({ workspace })
      const session = yield* open({}).pipe(
        Effect.provideService(Backend, Context.get(context, Backend)),
        Effect.provideService(ToolExecutor, executor)
      )

      const seenEarly: Array<number> = []
      const batches: Array<number> = []
      const received: Array<Chunk> = []
      yield* session.run("go").pipe(
        Stream.runForEachChunk((batch) =>
          Effect.sync(() => {
            batches.push(deltaCount(batch))
            for (const event of batch) {
              if (event.seq === undefined) continue
              if (event.seq > committed) seenEarly.push(event.seq)
              received.push(event as Chunk)
            }
          })
        )
      )

      // One transaction for the burst, one for the lone delta: per read, never per delta.
      assert.deepStrictEqual(commits, [BURST, 1])
      assert.deepStrictEqual(seenEarly, [], "chunks reached the task stream before their commit")
      // The task stream carried the burst as one batch, not as 50 single-element steps.
      assert.include(batches, BURST)
      assert.deepStrictEqual(received.map((c) => c.seq), received.map((_, i) => i + 1))
      assert.strictEqual(received.flatMap((c) => (c.type === "text_delta" ? [c.content] : [])).join(""), deltas.join(""))
      assert.strictEqual(received.at(-1)?.type, "stop_reason")
    }))

  it.scoped("a follower that stops reading never holds up the run, and later gets every chunk once, in order", () =>
    Effect.gen(function*() {
      const store = yield* Effect.provide(Store, layerMemory)
      const conversation = yield* store.createConversation({})
      const { run } = yield* store.createRun(conversation.id, Otid.make("o"), "turn")
      const log = yield* makeRunLog(store, { conversationId: conversation.id, runId: run.id, lastSeq: 0 })
      // Caught up with the live run (its backlog read, one live chunk taken); then it reads nothing
      // while the run writes far past the live buffer.
      const pull = yield* Stream.toPull(log.follow(0))
      yield* log.emit([{ event: { type: "request_begin", attempt: 0 } }])
      const backlog = yield* pull
      yield* log.emit([{ event: { type: "text_delta", content: "live " } }])
      const live = yield* pull
      const head = EChunk.appendAll(backlog, live)
      const total = LIVE_CAPACITY * 3
      for (let i = 0; i < total; i += 16) {
        yield* log.emit(Array.from({ length: 16 }, (_, k) => ({ event: { type: "text_delta", content: `${i + k} ` } as const })))
      }
      yield* log.emit([{ event: { type: "stop_reason", reason: "end_turn" }, record: "item" }], {
        finish: { status: "completed", stopReason: "end_turn", onCommitted: Effect.void }
      })
      const rest: Array<Chunk> = []
      for (;;) {
        const next = yield* Effect.option(pull)
        if (Option.isNone(next)) break
        rest.push(...EChunk.toReadonlyArray(next.value))
      }
      const seqs = [...EChunk.toReadonlyArray(head), ...rest].map((c) => c.seq)
      assert.deepStrictEqual(seqs, Array.from({ length: total + 3 }, (_, i) => i + 1))
      assert.strictEqual(rest.at(-1)?.type, "stop_reason")
    }))
})
