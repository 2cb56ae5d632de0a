import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Layer, Queue, Stream } from "effect"
import type { RunId } from "../../domain/Ids.js"
import { realClock } from "../RealClock.js"
import { RunTail } from "../RunTail.js"

/**
 * The channel every Baton process on the database listens on; a notice is run ids, comma-separated
 * (the Store sends them with pg_notify: NOTIFY takes no bind parameter).
 */
export const CHANNEL = "baton_run_commits"

/**
 * RunTail over LISTEN/NOTIFY on the Store's PostgreSQL. The Store that shares the pool
 * (Pg.layerWithClient) announces every commit inside the commit's own statement or transaction —
 * a notice is delivered when the commit commits, so never before its chunks can be read, and no
 * commit pays a round trip of its own for it — so `committed` has nothing left to send. One
 * listening connection feeds every follower in this process, and a notice wakes only the
 * followers of the runs it names (a runner follows hundreds of runs; each hearing of every commit
 * would cost the square). A follower's wake-up is a flag, not a count: notices that arrive while
 * it reads are one more read, not one each. A broken listener is logged and followers fall back to
 * looking again on their bound.
 */
export const layer: Layer.Layer<RunTail, never, PgClient.PgClient> = Layer.scoped(RunTail, Effect.gen(function*() {
  const sql = yield* PgClient.PgClient
  const followers = new Map<string, Set<Queue.Queue<void>>>()
  const wake = (ids: ReadonlyArray<string>) => {
    for (const id of ids) {
      const waiting = followers.get(id)
      if (waiting !== undefined) for (const flag of waiting) flag.unsafeOffer(undefined)
    }
  }
  yield* sql.listen(CHANNEL).pipe(
    Stream.runForEach((payload) => Effect.sync(() => wake(payload.split(",")))),
    Effect.catchAll((e) => Effect.logWarning("stopped listening for run commits; followers poll instead", e)),
    Effect.forkScoped
  )
  const register = (runId: RunId) =>
    Effect.acquireRelease(
      Effect.tap(Queue.sliding<void>(1), (flag) => Effect.sync(() => {
        const waiting = followers.get(runId) ?? new Set()
        waiting.add(flag)
        followers.set(runId, waiting)
      })),
      (flag) => Effect.sync(() => {
        const waiting = followers.get(runId)
        waiting?.delete(flag)
        if (waiting?.size === 0) followers.delete(runId)
      })
    )
  return RunTail.of({
    committed: () => Effect.void,
    watch: (runId) =>
      Effect.map(register(runId), (flag) => (ms: number) =>
        Queue.take(flag).pipe(Effect.timeoutOption(ms), Effect.asVoid, Effect.withClock(realClock)))
  })
}))
