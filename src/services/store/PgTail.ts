import * as PgClient from "@effect/sql-pg/PgClient"
import { Chunk, Effect, Layer, Queue, Stream } from "effect"
import type { RunId } from "../../domain/Ids.js"
import { realClock } from "../RealClock.js"
import { RunTail } from "../RunTail.js"

/** The channel every Baton process on the database listens on; a notice is run ids, comma-separated. */
export const CHANNEL = "baton_run_commits"

/** PostgreSQL caps a notice's payload at 8000 bytes; run ids are ASCII. */
const MAX_PAYLOAD = 7_900

/** Run ids as few notices as fit, each under the payload cap. */
export const payloads = (ids: Iterable<string>): ReadonlyArray<string> => {
  const out: Array<string> = []
  let current = ""
  for (const id of new Set(ids)) {
    if (current.length > 0 && current.length + 1 + id.length > MAX_PAYLOAD) {
      out.push(current)
      current = ""
    }
    current = current.length === 0 ? id : `${current},${id}`
  }
  if (current.length > 0) out.push(current)
  return out
}

/**
 * RunTail over LISTEN/NOTIFY on the Store's PostgreSQL. Commits are announced by one fiber that
 * takes every run id queued since its last notice, so a busy runner sends a notice per batch of
 * commits, not per commit; one listening connection feeds every follower in this process, and a
 * notice wakes only the followers of the runs it names (a runner follows hundreds of runs; each
 * hearing of every commit would cost the square). A follower's wake-up is a flag, not a count:
 * notices that arrive while it reads are one more read, not one each. A broken listener is logged
 * and followers fall back to looking again on their bound.
 */
export const layer: Layer.Layer<RunTail, never, PgClient.PgClient> = Layer.scoped(RunTail, Effect.gen(function*() {
  const sql = yield* PgClient.PgClient
  const outbox = yield* Queue.unbounded<RunId>()
  const followers = new Map<string, Set<Queue.Queue<void>>>()
  const wake = (ids: ReadonlyArray<string>) => {
    for (const id of ids) {
      const waiting = followers.get(id)
      if (waiting !== undefined) for (const flag of waiting) flag.unsafeOffer(undefined)
    }
  }
  yield* Queue.takeBetween(outbox, 1, Number.MAX_SAFE_INTEGER).pipe(
    // pg_notify, not the client's `notify`: NOTIFY takes no bind parameter, so `NOTIFY c, $1` is refused every time.
    Effect.flatMap((ids) => Effect.forEach(payloads(Chunk.toReadonlyArray(ids)), (payload) => sql`SELECT pg_notify(${CHANNEL}, ${payload})`, { discard: true })),
    Effect.catchAll((e) => Effect.logWarning("could not announce run commits", e)),
    Effect.forever,
    Effect.forkScoped
  )
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
    committed: (runId) => Queue.offer(outbox, runId).pipe(Effect.asVoid),
    watch: (runId) =>
      Effect.map(register(runId), (flag) => (ms: number) =>
        Queue.take(flag).pipe(Effect.timeoutOption(ms), Effect.asVoid, Effect.withClock(realClock)))
  })
}))
