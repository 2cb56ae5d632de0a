import { assert, it } from "@effect/vitest"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Clock, Context, Effect, Exit, Fiber, Layer, Redacted, Ref } from "effect"
import { Otid, ToolCallId } from "../../src/domain/Ids.js"
import { RunTail } from "../../src/services/RunTail.js"
import { layerWithClient } from "../../src/services/store/Pg.js"
import * as PgTail from "../../src/services/store/PgTail.js"
import { Store } from "../../src/services/Store.js"
import { freshSchema, onPostgres } from "../support/pgDatabase.js"
import { countRoundTrips } from "../support/pgRoundTrips.js"

/** A RunTail of its own connection pool: another process on the same database. */
const tailOn = (url: string) =>
  Effect.map(Layer.build(PgTail.layer.pipe(Layer.provide(PgClient.layer({ url: Redacted.make(url) })))), (ctx) => Context.get(ctx, RunTail))

onPostgres("RunTail over LISTEN/NOTIFY", (url) => {
  it.live("a commit of the Store in one process wakes the follower of that run in another, long before its bound, at no round trip of its own", () =>
    Effect.gen(function*() {
      const { url: schemaUrl } = yield* freshSchema
      const owner = Context.get(yield* Layer.build(layerWithClient({ url: schemaUrl })), Store)
      const follower = yield* tailOn(url)
      const conversation = yield* owner.createConversation({})
      const { run } = yield* owner.createRun(conversation.id, Otid.make("o"), "turn")
      const next = yield* follower.watch(run.id)
      // The bound is far beyond the test's timeout: only a notice can end this wait in time.
      const waiting = yield* Effect.fork(next(600_000))
      // The listener may still be connecting: commit until the follower hears one. Each commit is
      // one statement, its notice inside it.
      const trips = yield* countRoundTrips
      const seq = yield* Ref.make(0)
      const commits = yield* Ref.make(0)
      const committing = yield* Effect.fork(Effect.forever(Effect.gen(function*() {
        const n = yield* Ref.updateAndGet(seq, (s) => s + 1)
        const fiber = yield* Effect.fork(owner.commit({
          conversationId: conversation.id,
          chunks: [{ type: "text_delta", content: `${n}`, run_id: run.id, seq: n }]
        }))
        yield* Fiber.join(fiber)
        yield* Ref.update(commits, (c) => c + 1)
        yield* Effect.sleep("50 millis")
      })))
      const woken = yield* Fiber.await(waiting)
      yield* Fiber.interrupt(committing)
      assert.isTrue(Exit.isSuccess(woken), "the follower was woken by the Store's notice")
      // Counted while only this test's store ran statements: one a commit, whatever it announced.
      assert.isAtMost(trips.total(), (yield* Ref.get(commits)) + 1, JSON.stringify(Object.fromEntries(trips.byKind())))

      // A commit that records (the run's answer) announces too, in its own statement;
      // and one that answers a tool call (the general path, a transaction) inside its transaction.
      for (const write of ["recorded", "tool"] as const) {
        const again = yield* Effect.fork(next(600_000))
        yield* Effect.sleep("100 millis")
        const n = yield* Ref.updateAndGet(seq, (s) => s + 1)
        yield* owner.commit({
          conversationId: conversation.id,
          chunks: [{ type: "text_delta", content: "!", run_id: run.id, seq: n }],
          ...(write === "recorded"
            ? { items: [{ item: { type: "assistant_message", content: "done" } }] }
            : { items: [{ item: { type: "tool_call", tool_call_id: ToolCallId.make("t1"), name: "Read", arguments: "{}" } }] })
        })
        assert.isTrue(Exit.isSuccess(yield* Fiber.await(again)), `the follower was woken by the ${write} commit's notice`)
      }
    }).pipe(Effect.scoped, Effect.withClock(Clock.make())), 30_000)
})
