import { assert, it } from "@effect/vitest"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Context, Effect, Exit, Fiber, Layer, Redacted } from "effect"
import { RunId } from "../../src/domain/Ids.js"
import { RunTail } from "../../src/services/RunTail.js"
import * as PgTail from "../../src/services/store/PgTail.js"
import { onPostgres } from "../support/pgDatabase.js"

/** A RunTail of its own connection pool: another process on the same database. */
const tailOn = (url: string) =>
  Effect.map(Layer.build(PgTail.layer.pipe(Layer.provide(PgClient.layer({ url: Redacted.make(url) })))), (ctx) => Context.get(ctx, RunTail))

onPostgres("RunTail over LISTEN/NOTIFY", (url) => {
  it.live("a commit announced by one process wakes the follower of that run in another, long before its bound", () =>
    Effect.gen(function*() {
      const owner = yield* tailOn(url)
      const follower = yield* tailOn(url)
      const runId = RunId.make(`run-${crypto.randomUUID()}`)
      const next = yield* follower.watch(runId)
      // The bound is far beyond the test's timeout: only a notice can end this wait in time.
      const waiting = yield* Effect.fork(next(600_000))
      // The listener may still be connecting: announce until the follower hears one.
      const announcing = yield* Effect.fork(Effect.forever(Effect.zipRight(owner.committed(runId), Effect.sleep("50 millis"))))
      const woken = yield* Fiber.await(waiting)
      yield* Fiber.interrupt(announcing)
      assert.isTrue(Exit.isSuccess(woken), "the follower was woken by the owner's notice")
    }).pipe(Effect.scoped), 30_000)
})
