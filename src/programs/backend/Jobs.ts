import { type Deferred, Effect, type Fiber, Option, Ref } from "effect"
import type { ConversationId, RunId, ToolCallId } from "../../domain/Ids.js"
import type { RunLog } from "./RunLog.js"

/**
 * The one active job (a run or a compaction) of each conversation that is live in this process.
 * A job is removed the moment its stop_reason is committed, before anyone can see it, so a client
 * that reacts to a stop_reason never meets a stale "busy".
 */
export interface Job {
  readonly conversationId: ConversationId
  readonly runId: RunId
  readonly kind: "run" | "compaction"
  /** The job's run log: followers of a live run read it here. */
  readonly log: RunLog
  readonly fiber: Fiber.RuntimeFiber<unknown, unknown>
  /** Set before a user's cancel interrupts the fiber; a shutdown interrupt leaves it false. */
  readonly cancelRequested: Ref.Ref<boolean>
  /** Completed by skipReconnectWait; replaced at each wait. */
  readonly skip: Ref.Ref<Deferred.Deferred<void>>
  /** The tool calls this job has streamed: a result for one may arrive before the run commits it. */
  readonly calls: Ref.Ref<ReadonlySet<ToolCallId>>
}

export interface Jobs {
  readonly get: (id: ConversationId) => Effect.Effect<Option.Option<Job>>
  readonly byRun: (runId: RunId) => Effect.Effect<Option.Option<Job>>
  readonly add: (job: Job) => Effect.Effect<void>
  /** Removes the job only if it is still this run's (a later job must not be dropped). */
  readonly remove: (id: ConversationId, runId: RunId) => Effect.Effect<void>
}

export const makeJobs: Effect.Effect<Jobs> = Effect.map(Ref.make(new Map<ConversationId, Job>()), (ref) => ({
  get: Effect.fn("Jobs.get")((id: ConversationId) => Effect.map(Ref.get(ref), (jobs) => Option.fromNullable(jobs.get(id)))),
  byRun: Effect.fn("Jobs.byRun")((runId: RunId) =>
    Effect.map(Ref.get(ref), (jobs) => Option.fromNullable([...jobs.values()].find((j) => j.runId === runId)))),
  add: Effect.fn("Jobs.add")((job: Job) => Ref.update(ref, (jobs) => new Map(jobs).set(job.conversationId, job))),
  remove: Effect.fn("Jobs.remove")((id: ConversationId, runId: RunId) =>
    Ref.update(ref, (jobs) => {
      if (jobs.get(id)?.runId !== runId) return jobs
      const next = new Map(jobs)
      next.delete(id)
      return next
    }))
}))

/** The run log as a job's run uses it: the calls it streams are noted before they are committed (and seen). */
export const tracksCalls = (log: RunLog, calls: Ref.Ref<ReadonlySet<ToolCallId>>): RunLog => ({
  ...log,
  emit: (entries, options) =>
    Effect.zipRight(
      Ref.update(calls, (known) => {
        const ids = entries.flatMap((e) => (e.event.type === "tool_call" ? [e.event.tool_call_id] : []))
        return ids.length === 0 ? known : new Set([...known, ...ids])
      }),
      log.emit(entries, options)
    )
})

/** The run log telling `committed` after each commit (followers elsewhere read the Store then). */
export const announces = (log: RunLog, committed: (runId: RunId) => Effect.Effect<void>): RunLog => ({
  ...log,
  emit: (entries, options) => Effect.tap(log.emit(entries, options), () => committed(log.runId))
})
