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

/**
 * The index of the live jobs, by conversation and by run. Each conversation's actor is the only
 * writer of its entry (it adds the job it admits; the job removes itself as it stops); readers — a
 * follower by run, `isBusy` by conversation — never wait for an actor. Two plain maps: an update is
 * one synchronous step, so no lock is needed and no conversation's update copies the others'.
 */
export interface Jobs {
  readonly get: (id: ConversationId) => Effect.Effect<Option.Option<Job>>
  readonly byRun: (runId: RunId) => Effect.Effect<Option.Option<Job>>
  readonly add: (job: Job) => Effect.Effect<void>
  /** Removes the job only if it is still this run's (a later job must not be dropped). */
  readonly remove: (id: ConversationId, runId: RunId) => Effect.Effect<void>
}

export const makeJobs: Effect.Effect<Jobs> = Effect.sync(() => {
  const byConversation = new Map<ConversationId, Job>()
  const byRun = new Map<RunId, Job>()
  return {
    get: (id) => Effect.sync(() => Option.fromNullable(byConversation.get(id))),
    byRun: (runId) => Effect.sync(() => Option.fromNullable(byRun.get(runId))),
    add: (job) =>
      Effect.sync(() => {
        const before = byConversation.get(job.conversationId)
        if (before !== undefined) byRun.delete(before.runId)
        byConversation.set(job.conversationId, job)
        byRun.set(job.runId, job)
      }),
    remove: (id, runId) =>
      Effect.sync(() => {
        if (byConversation.get(id)?.runId !== runId) return
        byConversation.delete(id)
        byRun.delete(runId)
      })
  }
})

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
