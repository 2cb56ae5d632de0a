import { Cause, Chunk as EChunk, Deferred, Effect, Either, Exit, Fiber, Option, Ref, Stream } from "effect"
import type { Conversation } from "../../domain/Conversation.js"
import type { CarryOver } from "../../domain/CarryOver.js"
import { closeCalls } from "../../domain/CarryOver.js"
import type { BackendError, StoreError } from "../../domain/Errors.js"
import { busyWith, InvalidInput } from "../../domain/Errors.js"
import type { Chunk, CompactionReason } from "../../domain/Events.js"
import type { NewItem } from "../../domain/History.js"
import type { ApprovalDecision } from "../../domain/Events.js"
import { type ConversationId, Otid, type RunId, type ToolCallId } from "../../domain/Ids.js"
import type { ToolReturn } from "../../domain/Messages.js"
import { planInput } from "../../domain/ToolResults.js"
import type { ThinkingLevel } from "../../domain/ProviderEvent.js"
import type { Budgets } from "../../domain/Recovery.js"
import { skippableWait } from "../../domain/RecoverySchedule.js"
import { activityOf, type SendInput } from "../../domain/Run.js"
import { isSteeringOtid } from "../../domain/Tags.js"
import type { RunTail } from "../../services/RunTail.js"
import { Store } from "../../services/Store.js"
import { Compactions } from "./Compaction.js"
import { announces, type Job, makeJobs, tracksCalls } from "./Jobs.js"
import { Runs } from "./Run.js"
import { openTurn, submitResult as commitResult } from "./Results.js"
import { checkRerun } from "./Rerun.js"
import { closeRun, RUNNER_LOST } from "./DeadRuns.js"
import { followStored, makeRunLog, type RunLog } from "./RunLog.js"
import { recordOf, type RunRecord } from "./RunRecord.js"

export interface Actors {
  /** Starts a run for `input` (or finds the one its otid started) and streams it from its first chunk. */
  readonly send: (id: ConversationId, input: SendInput) => Effect.Effect<Stream.Stream<Chunk, BackendError>, BackendError>
  /** A live run from this process's log, any other from the Store. */
  readonly follow: (runId: RunId, after: number) => Effect.Effect<Stream.Stream<Chunk, BackendError>>
  readonly cancel: (id: ConversationId, carryOver?: CarryOver) => Effect.Effect<void, BackendError>
  readonly skipReconnectWait: (id: ConversationId) => Effect.Effect<void>
  /** A compaction as the conversation's one active job; its stream ends with a stop_reason. */
  readonly compact: (id: ConversationId, reason: CompactionReason) => Effect.Effect<Stream.Stream<Chunk, BackendError>, BackendError>
  /** A run or a compaction is active on the conversation, here or in another process. */
  readonly isBusy: (id: ConversationId) => Effect.Effect<boolean, StoreError>
  /** Commits one tool result as its tool finished (see Results.submitResult). */
  readonly submitResult: (id: ConversationId, result: ToolReturn, decision?: ApprovalDecision) => Effect.Effect<void, BackendError>
  /** `send` without the stream: the run `input` started (or the one its otid started before). */
  readonly admitSend: (id: ConversationId, input: SendInput) => Effect.Effect<RunId, BackendError>
  /** `compact` without the stream: the compaction's run. */
  readonly admitCompaction: (id: ConversationId, reason: CompactionReason) => Effect.Effect<RunId, BackendError>
  /**
   * Keeps a run going here until it stops: the job live in this process, or — a run left `running`
   * by a runner that was lost (a cluster takeover) — resumed from its committed chunks as a reconnect
   * (a compaction is closed as failed instead). Interrupting it stops the job without recording a
   * cancel, leaving the run to its next owner.
   */
  readonly drive: (runId: RunId, options?: { readonly thinking?: ThinkingLevel }) => Effect.Effect<void, BackendError>
  /** The conversation's run left `running` by a lost runner, resumed here first (before a cancel or a result reaches it). */
  readonly adoptActive: (id: ConversationId) => Effect.Effect<void, BackendError>
}

/** How a job is admitted: the run this request already started (its otid), else a new one. */
interface Admission<E> {
  /** A run this request already started: followed, never a Conflict with itself. */
  readonly existing?: Effect.Effect<Option.Option<RunId>, E>
  readonly create: Effect.Effect<{ readonly runId: RunId; readonly lastSeq: number }, E>
}

type JobBody = (log: RunLog, job: Pick<Job, "cancelRequested" | "skip">, onStopped: Effect.Effect<void>) => Effect.Effect<void, unknown>

/**
 * Conversation actors: at most one job per conversation, admitted under a short critical section,
 * running in the backend's scope (not the caller's), so a reader that goes away stops nothing.
 */
export const makeActors = Effect.fn("Actors.make")(function*(options: {
  readonly budgets: Budgets
  /** Recorded on every run this process starts (see ProcessIdentity). */
  readonly owner: string
  /** How followers in other processes hear of this one's commits, and this one's of theirs (a cluster). */
  readonly tail?: RunTail["Type"]
}) {
  const store = yield* Store
  const runs = yield* Runs
  const compactions = yield* Compactions
  const scope = yield* Effect.scope
  const jobs = yield* makeJobs
  // Admission is a few index lookups on one connection; one lock keeps it simple and race-free.
  const admission = yield* Effect.makeSemaphore(1)

  const activeJob = (id: ConversationId) =>
    Effect.gen(function*() {
      const job = yield* jobs.get(id)
      if (Option.isSome(job)) return Option.some({ runId: job.value.runId, activity: job.value.kind })
      return Option.map(yield* store.activeRun(id), (run) => ({ runId: run.id, activity: activityOf(run.kind) }))
    })

  /** Runs `body` as the conversation's one job, in the backend's scope; called under admission. */
  const launch = (id: ConversationId, kind: Job["kind"], run: { readonly runId: RunId; readonly lastSeq: number }, body: JobBody, streamed: ReadonlyArray<ToolCallId> = []) =>
    Effect.gen(function*() {
      const { runId } = run
      const calls = yield* Ref.make<ReadonlySet<ToolCallId>>(new Set(streamed))
      const made = yield* makeRunLog(store, { conversationId: id, runId, lastSeq: run.lastSeq })
      const log = tracksCalls(options.tail === undefined ? made : announces(made, options.tail.committed), calls)
      const cancelRequested = yield* Ref.make(false)
      const skip = yield* Ref.make(yield* Deferred.make<void>())
      const go = yield* Deferred.make<void>()
      const onStopped = jobs.remove(id, runId)
      const fiber = yield* Deferred.await(go).pipe(
        Effect.zipRight(body(log, { cancelRequested, skip }, onStopped)),
        Effect.catchAllCause((cause) => Effect.logError(`${kind} ${runId} failed`, cause)),
        Effect.ensuring(onStopped),
        Effect.forkIn(scope)
      )
      yield* jobs.add({ conversationId: id, runId, kind, log, fiber, cancelRequested, skip, calls })
      yield* Deferred.succeed(go, undefined)
    })

  const startJob = <E>(id: ConversationId, kind: Job["kind"], admit: Admission<E>, body: JobBody) =>
    admission.withPermits(1)(
      Effect.gen(function*() {
        const existing = admit.existing !== undefined ? yield* admit.existing : Option.none<RunId>()
        if (Option.isSome(existing)) return existing.value
        const active = yield* activeJob(id)
        if (Option.isSome(active)) return yield* busyWith(id, active.value.runId, active.value.activity)
        const created = yield* admit.create
        yield* launch(id, kind, created, body)
        return created.runId
      })
    )

  const follow = Effect.fn("Actors.follow")(function*(runId: RunId, after: number) {
    const job = yield* jobs.byRun(runId)
    if (Option.isSome(job)) return job.value.log.follow(after)
    const tail = options.tail
    if (tail === undefined) return followStored(store, runId, after)
    // The owner's notices wake it; a second is the bound for one that was missed.
    return Stream.unwrapScoped(Effect.map(tail.watch(runId), (next) => followStored(store, runId, after, 1_000, next)))
  })

  const turn = (conversation: Conversation, thinking: ThinkingLevel | undefined, resumed?: RunRecord, reconnectsSpent?: number): JobBody => (log, job, onStopped) =>
    runs.run({
      log,
      conversation,
      thinking,
      budgets: options.budgets,
      ...(reconnectsSpent !== undefined ? { reconnectsSpent } : {}),
      wait: skippableWait(job.skip),
      onStopped,
      cancelRequested: Ref.get(job.cancelRequested),
      ...(resumed !== undefined ? { resumed } : {})
    })

  const admitSend = Effect.fn("Actors.admitSend")(function*(id: ConversationId, input: SendInput) {
    const rerun = input.retry !== undefined
    if (rerun && input.messages.length > 0) return yield* new InvalidInput({ message: "a retry sends no new messages" })
    const otid = input.retry ?? input.messages[0]?.otid
    if (otid === undefined) return yield* new InvalidInput({ message: "a run needs at least one input message (or `retry` after an auth or error stop)" })
    const conversation = yield* store.getConversation(id)
    const create = Effect.gen(function*() {
      const turn = yield* openTurn(store, id)
      const given = input.messages.flatMap((m) => (m.type === "tool_return" ? [m.tool_call_id] : []))
      const returns = given.length === 0 ? turn.returns : yield* store.toolReturns(id, [...turn.pending.map((c) => c.tool_call_id), ...given])
      const plan = yield* Either.match(planInput(id, input.messages, turn.pending, returns, rerun), { onLeft: Effect.fail, onRight: Effect.succeed })
      // After the plan: pending calls refuse a retry with ApprovalPending, which says what to do.
      if (rerun) yield* checkRerun(store, id)
      const { run } = yield* store.createRun(id, otid, "turn", { owner: options.owner })
      const events: ReadonlyArray<NewItem> = (input.events ?? []).map((item) => ({ item: { ...item, run_id: run.id } }))
      yield* store.commit({
        conversationId: id,
        items: [...events, ...plan.items.map((n): NewItem => ({ ...n, item: { ...n.item, run_id: run.id } }))],
        expectOpen: plan.answers,
        // A client that continues its task with held steering sends it as input: recording it takes it.
        takesSteering: input.messages.flatMap((m) => (m.type === "user_message" && isSteeringOtid(m.otid) ? [m.otid] : []))
      }).pipe(Effect.catchTag("ChunkSeqError", Effect.die))
      return { runId: run.id, lastSeq: run.lastSeq }
    })
    const runId = yield* startJob(
      id,
      "run",
      {
        // Checked inside admission: two sends of one otid, even concurrent, share one run.
        existing: Effect.map(store.runByOtid(id, otid), Option.map((run) => run.id)),
        create
      },
      turn(conversation, input.thinking, undefined, input.reconnects_spent)
    )
    return runId
  })

  const send = Effect.fn("Actors.send")(function*(id: ConversationId, input: SendInput) {
    return yield* follow(yield* admitSend(id, input), 0)
  })

  const cancel = Effect.fn("Actors.cancel")(function*(id: ConversationId, carryOver?: CarryOver) {
    // Under admission from the stop to the carry-over's commit: a send that was waiting for the
    // conversation to be free is admitted after the carry-over, which its request must carry.
    yield* admission.withPermits(1)(
      Effect.gen(function*() {
        const job = yield* jobs.get(id)
        if (Option.isSome(job)) {
          yield* Ref.set(job.value.cancelRequested, true)
          yield* Fiber.interrupt(job.value.fiber)
        }
        // A run another process owns cannot be stopped from here; recording around it would interleave with it.
        const foreign = yield* store.activeRun(id)
        if (Option.isSome(foreign)) {
          const { id: runId, kind } = foreign.value
          return yield* busyWith(id, runId, activityOf(kind), `run ${runId} belongs to another Baton process; stop it there`)
        }
        const { held, pending } = yield* openTurn(store, id)
        const items: ReadonlyArray<NewItem> = closeCalls(pending, carryOver, held)
        if (items.length > 0) {
          yield* store.commit({ conversationId: id, items }).pipe(Effect.catchTag("ChunkSeqError", Effect.die))
        }
      })
    )
  })

  const skipReconnectWait = Effect.fn("Actors.skipReconnectWait")(function*(id: ConversationId) {
    const job = yield* jobs.get(id)
    if (Option.isSome(job)) yield* Deferred.succeed(yield* Ref.get(job.value.skip), undefined)
  })

  const admitCompaction = Effect.fn("Actors.admitCompaction")(function*(id: ConversationId, reason: CompactionReason) {
    const conversation = yield* store.getConversation(id)
    const runId = yield* startJob(
      id,
      "compaction",
      {
        create: Effect.map(
          store.createRun(id, Otid.make(`compaction-${crypto.randomUUID()}`), "compaction", { owner: options.owner }),
          ({ run }) => ({ runId: run.id, lastSeq: run.lastSeq })
        )
      },
      (log, job, onStopped) =>
        Effect.gen(function*() {
          const outcome = yield* compactions.run({ log, conversation, reason, wait: skippableWait(job.skip) }).pipe(
            Effect.catchAllCause((cause) =>
              Cause.isInterruptedOnly(cause)
                ? Effect.failCause(cause)
                : Effect.as(Effect.logError("compaction failed unexpectedly", cause), "failed" as const)
            )
          )
          const stopReason = outcome === "ok" ? "end_turn" : "error"
          yield* log.emit([{ event: { type: "stop_reason", reason: stopReason }, record: "item" }], {
            finish: { status: outcome === "ok" ? "completed" : "failed", stopReason, onCommitted: onStopped }
          })
        })
    )
    return runId
  })

  const compact = Effect.fn("Actors.compact")(function*(id: ConversationId, reason: CompactionReason) {
    return yield* follow(yield* admitCompaction(id, reason), 0)
  })

  const isBusy = Effect.fn("Actors.isBusy")(function*(id: ConversationId) {
    return Option.isSome(yield* activeJob(id))
  })

  const submitResult = Effect.fn("Actors.submitResult")(function*(id: ConversationId, result: ToolReturn, decision?: ApprovalDecision) {
    // Under admission: a result and a run's input, or a cancel, never both answer one call.
    yield* admission.withPermits(1)(Effect.gen(function*() {
      const job = yield* jobs.get(id)
      const streamed = Option.isSome(job) && (yield* Ref.get(job.value.calls)).has(result.tool_call_id)
      yield* commitResult(store, id, result, { decision, streamedBy: streamed && Option.isSome(job) ? job.value.runId : undefined })
    }))
  })

  /** A run left `running` by a lost runner, made this process's job (under admission; nothing if it is live or over). */
  const adopt = (runId: RunId, thinking: ThinkingLevel | undefined): Effect.Effect<void, BackendError> =>
    admission.withPermits(1)(Effect.gen(function*() {
      if (Option.isSome(yield* jobs.byRun(runId))) return
      const run = yield* store.getRun(runId)
      if (run.status !== "running") return
      if (run.kind === "compaction") return yield* closeRun(store, run, RUNNER_LOST)
      yield* store.claimRun(runId, options.owner)
      const chunks = yield* Stream.runCollect(store.readChunks(runId, 0))
      const conversation = yield* store.getConversation(run.conversationId)
      const streamed = EChunk.toReadonlyArray(chunks).flatMap((c) => (c.type === "tool_call" ? [c.tool_call_id] : []))
      yield* launch(run.conversationId, "run", { runId, lastSeq: run.lastSeq }, turn(conversation, thinking, recordOf(chunks)), streamed)
    })).pipe(Effect.catchTags({ ChunkSeqError: Effect.die, ToolCallAnswered: Effect.die }))

  const adoptActive = Effect.fn("Actors.adoptActive")(function*(id: ConversationId) {
    const active = yield* store.activeRun(id)
    if (Option.isSome(active)) yield* adopt(active.value.id, undefined)
  })

  const drive = Effect.fn("Actors.drive")(function*(runId: RunId, opts?: { readonly thinking?: ThinkingLevel }) {
    yield* adopt(runId, opts?.thinking)
    const job = yield* jobs.byRun(runId)
    if (Option.isNone(job)) return
    const fiber = job.value.fiber
    const exit = yield* Fiber.await(fiber).pipe(Effect.onInterrupt(() => Fiber.interrupt(fiber)))
    // A job stopped by a shutdown left its run `running`: this drive is not done, its next owner's is.
    if (Exit.isInterrupted(exit) && (yield* store.getRun(runId)).status === "running") return yield* Effect.interrupt
  })

  const actors: Actors = { send, follow, cancel, skipReconnectWait, compact, isBusy, submitResult, admitSend, admitCompaction, drive, adoptActive }
  return actors
})
