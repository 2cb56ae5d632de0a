import { Duration, Effect, Schedule } from "effect"
import type { ConversationId, RunId } from "../../domain/Ids.js"
import type { Run } from "../../domain/Run.js"
import type { Store } from "../../services/Store.js"

export interface StaleRunSweep {
  readonly store: Pick<Store["Type"], "runningRuns">
  /** The conversation's shard is this runner's now: its runs are this runner's to drive. */
  readonly holds: (id: ConversationId) => boolean
  /** A job of the run is live in this process. */
  readonly hasJob: (runId: RunId) => Effect.Effect<boolean>
  /** Hands the run to its conversation's owner to drive (idempotent: a run with a job is only waited for). */
  readonly resume: (run: Run) => Effect.Effect<void>
}

const progress = (run: Run) => `${run.lastSeq}:${run.updatedAt}`

/**
 * One look for runs nobody drives, returning those handed on. A run is `running` until its Drive
 * (a persisted entity request) has seen it end; the cluster marks a request read before it delivers
 * it, and one it then skips (its shard lost and re-taken under load) is read again only minutes
 * later. Such a run has no job anywhere, and its followers wait. A run of a conversation whose shard
 * this runner holds, with no job here, that made no progress since the previous look, is such a run
 * (or one whose Drive is about to arrive, which the idempotent hand-over does not disturb).
 */
export const makeStaleRunSweep = (options: StaleRunSweep) => {
  let idleBefore = new Map<RunId, string>()
  return Effect.gen(function*() {
    const idle: Array<Run> = []
    for (const run of yield* options.store.runningRuns) {
      if (options.holds(run.conversationId) && !(yield* options.hasJob(run.id))) idle.push(run)
    }
    const before = idleBefore
    idleBefore = new Map(idle.map((run) => [run.id, progress(run)]))
    const stranded = idle.filter((run) => before.get(run.id) === progress(run))
    yield* Effect.forEach(stranded, options.resume, { concurrency: "unbounded", discard: true })
    return stranded.map((run) => run.id)
  }).pipe(Effect.withSpan("StaleRuns.sweep"))
}

/**
 * The sweep every `every`, for as long as the caller's scope: a stranded run is handed on within two
 * periods. A look that fails (the database out of reach) is logged; the next one looks again, since
 * a stranded run stays stranded until someone does.
 */
export const sweepStaleRuns = (options: StaleRunSweep, every: Duration.DurationInput) =>
  makeStaleRunSweep(options).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("could not look for runs nobody drives", cause)),
    Effect.repeat(Schedule.spaced(Duration.decode(every))),
    Effect.forkScoped
  )
