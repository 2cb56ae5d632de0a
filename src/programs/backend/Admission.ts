import { Cause, Chunk as EChunk, Deferred, Effect, Either, ExecutionStrategy, Exit, Fiber, Option, Ref, Scope, Stream } from "effect"
import type { Conversation } from "../../domain/Conversation.js"
import type { BackendError, NotFound, StoreError } from "../../domain/Errors.js"
import { busyWith, InvalidInput } from "../../domain/Errors.js"
import type { Chunk, CompactionReason } from "../../domain/Events.js"
import type { NewItem } from "../../domain/History.js"
import { type ConversationId, Otid, type RunId, type ToolCallId } from "../../domain/Ids.js"
import type { ThinkingLevel } from "../../domain/ProviderEvent.js"
import type { Budgets } from "../../domain/Recovery.js"
import { skippableWait } from "../../domain/RecoverySchedule.js"
import { activityOf, type SendInput } from "../../domain/Run.js"
import { isSteeringOtid } from "../../domain/Tags.js"
import { planInput } from "../../domain/ToolResults.js"
import type { RunTail } from "../../services/RunTail.js"
import { Store } from "../../services/Store.js"
import { Compactions } from "./Compaction.js"
import { closeRun, RUNNER_LOST } from "./DeadRuns.js"
import { announces, type Job, makeJobs, tracksCalls } from "./Jobs.js"
import { checkRerun } from "./Rerun.js"
import { openTurn } from "./Results.js"
import { Runs } from "./Run.js"
import { followStored, makeRunLog, type RunLog } from "./RunLog.js"
import { recordOf, type RunRecord } from "./RunRecord.js"

type JobBody = (log: RunLog, job: Pick<Job, "cancelRequested" | "skip">, onStopped: Effect.Effect<void>) => Effect.Effect<void, unknown>

/** Where a job is started: the actor's scope, and the hold that keeps the actor alive while the job runs. */
type Host = readonly [scope: Scope.Scope, keepAlive: Effect.Effect<void, never, Scope.Scope>]

/**
 * How a conversation's actor admits its one job (a run or a compaction) and starts it as a child
 * fiber. Called only from the actor's turn, so admission needs no lock: the inbox orders it.
 */
export const makeAdmissions = Effect.fn("Admission.make")(function*(options: {
  readonly budgets: Budgets
  /** Recorded on every run this process starts (see ProcessIdentity). */
  readonly owner: string
  /** How followers in other processes hear of this one's commits, and this one's of theirs (a cluster). */
  readonly tail?: RunTail["Type"]
}) {
  const store = yield* Store
  const runs = yield* Runs
  const compactions = yield* Compactions
  const jobs = yield* makeJobs

  const activeJob = (id: ConversationId) =>
    Effect.gen(function*() {
      const job = yield* jobs.get(id)
      if (Option.isSome(job)) return Option.some({ runId: job.value.runId, activity: job.value.kind })
      return Option.map(yield* store.activeRun(id), (run) => ({ runId: run.id, activity: activityOf(run.kind) }))
    })

  /** Runs `body` as the conversation's one job, a child fiber in the actor's scope holding the actor alive. */
  const launch = (
    id: ConversationId,
    kind: Job["kind"],
    run: { readonly runId: RunId; readonly lastSeq: number },
    body: JobBody,
    [scope, keepAlive]: Host,
    streamed: ReadonlyArray<ToolCallId> = []
  ) =>
    Effect.gen(function*() {
      const { runId } = run
      const calls = yield* Ref.make<ReadonlySet<ToolCallId>>(new Set(streamed))
      const made = yield* makeRunLog(store, { conversationId: id, runId, lastSeq: run.lastSeq })
      const log = tracksCalls(options.tail === undefined ? made : announces(made, options.tail.committed), calls)
      const cancelRequested = yield* Ref.make(false)
      const skip = yield* Ref.make(yield* Deferred.make<void>())
      const go = yield* Deferred.make<void>()
      const onStopped = jobs.remove(id, runId)
      // Taken before the turn answers: the actor is never idle while its job runs.
      const hold = yield* Scope.fork(scope, ExecutionStrategy.sequential)
      yield* Scope.extend(keepAlive, hold)
      const fiber = yield* Deferred.await(go).pipe(
        Effect.zipRight(body(log, { cancelRequested, skip }, onStopped)),
        Effect.catchAllCause((cause) => Effect.logError(`${kind} ${runId} failed`, cause)),
        // Removed first: a follower its close ends goes on from the Store or the next job, never this one.
        Effect.ensuring(Effect.zipRight(Effect.zipRight(onStopped, made.close), Scope.close(hold, Exit.void))),
        Effect.forkIn(scope)
      )
      yield* jobs.add({ conversationId: id, runId, kind, log, fiber, cancelRequested, skip, calls })
      yield* Deferred.succeed(go, undefined)
    })

  /** A compaction, the conversation being free (a turn's run checks that in its own createRun). */
  const startJob = (id: ConversationId, create: Effect.Effect<{ readonly runId: RunId; readonly lastSeq: number }, BackendError>, body: JobBody, host: Host) =>
    Effect.gen(function*() {
      const active = yield* activeJob(id)
      if (Option.isSome(active)) return yield* busyWith(id, active.value.runId, active.value.activity)
      const created = yield* create
      yield* launch(id, "compaction", created, body, host)
      return created.runId
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

  const send = Effect.fn("Admission.send")(function*(id: ConversationId, input: SendInput, ...host: Host) {
    const rerun = input.retry !== undefined
    if (rerun && input.messages.length > 0) return yield* new InvalidInput({ message: "a retry sends no new messages" })
    const otid = input.retry ?? input.messages[0]?.otid
    if (otid === undefined) return yield* new InvalidInput({ message: "a run needs at least one input message (or `retry` after an auth or error stop)" })
    const conversation = yield* store.getConversation(id)
    const plan = Effect.gen(function*() {
      const turn = yield* openTurn(store, id)
      const given = input.messages.flatMap((m) => (m.type === "tool_return" ? [m.tool_call_id] : []))
      const returns = given.length === 0 ? turn.returns : yield* store.toolReturns(id, [...turn.pending.map((c) => c.tool_call_id), ...given])
      const plan = yield* Either.match(planInput(id, input.messages, turn.pending, returns, rerun), { onLeft: Effect.fail, onRight: Effect.succeed })
      // After the plan: pending calls refuse a retry with ApprovalPending, which says what to do.
      if (rerun) yield* checkRerun(store, id)
      return plan
    })
    const planned = yield* Effect.either(plan)
    if (Either.isLeft(planned)) {
      // The store's checks come first when the input is good (createRun makes them); an input that is
      // not gets them here, so a repeated otid still answers with its run and a busy conversation
      // with Conflict, whatever the input says.
      const existing = yield* store.runByOtid(id, otid)
      if (Option.isSome(existing)) return existing.value.id
      const active = yield* activeJob(id)
      if (Option.isSome(active)) return yield* busyWith(id, active.value.runId, active.value.activity)
      return yield* Effect.fail(planned.left)
    }
    const { answers, items } = planned.right
    const { created, run } = yield* store.createRun(id, otid, "turn", {
      owner: options.owner,
      // Two sends of one otid, even concurrent, share one run: the second finds it in its own turn.
      input: (run) => ({
        items: [
          ...(input.events ?? []).map((item): NewItem => ({ item: { ...item, run_id: run.id } })),
          ...items.map((n): NewItem => ({ ...n, item: { ...n.item, run_id: run.id } }))
        ],
        expectOpen: answers,
        // A client that continues its task with held steering sends it as input: recording it takes it.
        takesSteering: input.messages.flatMap((m) => (m.type === "user_message" && isSteeringOtid(m.otid) ? [m.otid] : []))
      })
    })
    if (!created) return run.id
    yield* launch(id, "run", { runId: run.id, lastSeq: run.lastSeq }, turn(conversation, input.thinking, undefined, input.reconnects_spent), host)
    return run.id
  })

  const compact = Effect.fn("Admission.compact")(function*(id: ConversationId, reason: CompactionReason, ...host: Host) {
    const conversation = yield* store.getConversation(id)
    const create = Effect.map(
      store.createRun(id, Otid.make(`compaction-${crypto.randomUUID()}`), "compaction", { owner: options.owner }),
      ({ run }) => ({ runId: run.id, lastSeq: run.lastSeq })
    )
    const body: JobBody = (log, job, onStopped) =>
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
      }).pipe(
        // A user's cancel ends the compaction's run as cancelled; left `running`, its conversation would stay busy.
        Effect.onInterrupt(() =>
          Effect.gen(function*() {
            if (!(yield* Ref.get(job.cancelRequested)) || (yield* store.getRun(log.runId)).status !== "running") return
            yield* log.emit([{ event: { type: "stop_reason", reason: "cancelled" }, record: "item" }], {
              finish: { status: "cancelled", stopReason: "cancelled", onCommitted: onStopped }
            })
          }).pipe(Effect.catchAll((e) => Effect.logWarning("could not record the cancelled compaction", e))))
      )
    return yield* startJob(id, create, body, host)
  })

  const adopt = (runId: RunId, thinking: ThinkingLevel | undefined, ...host: Host): Effect.Effect<void, BackendError> =>
    Effect.gen(function*() {
      if (Option.isSome(yield* jobs.byRun(runId))) return
      const run = yield* store.getRun(runId)
      if (run.status !== "running") return
      if (run.kind === "compaction") return yield* closeRun(store, run, RUNNER_LOST)
      yield* store.claimRun(runId, options.owner)
      const chunks = yield* Stream.runCollect(store.readChunks(runId, 0))
      const conversation = yield* store.getConversation(run.conversationId)
      const streamed = EChunk.toReadonlyArray(chunks).flatMap((c) => (c.type === "tool_call" ? [c.tool_call_id] : []))
      yield* launch(run.conversationId, "run", { runId, lastSeq: run.lastSeq }, turn(conversation, thinking, recordOf(chunks)), host, streamed)
    }).pipe(Effect.catchTags({ ChunkSeqError: Effect.die, ToolCallAnswered: Effect.die }), Effect.withSpan("Admission.adopt"))

  /**
   * A live run from this process's log, any other from the Store. A job that stops before its run
   * does (its shard moved to another runner, or back to this one after a late lock refresh) publishes
   * nothing more: its followers go on from the seq they reached wherever the run goes on — the next
   * job here, or the Store — instead of waiting on a log that will never end. Only a cluster hands
   * runs over (one process stops its jobs only as it exits): elsewhere the live log is followed bare.
   * Every send and every stream request comes here: a look-up too small for a span of its own.
   */
  const follow = Effect.fnUntraced(function*(runId: RunId, after: number): Effect.fn.Return<Stream.Stream<Chunk, NotFound | StoreError>> {
    const job = yield* jobs.byRun(runId)
    if (Option.isSome(job) && options.tail === undefined) return job.value.log.follow(after)
    if (Option.isSome(job)) {
      let last = after
      let ended = false
      // The log's close ends it when the job stops, short of the stop_reason or not.
      const live = job.value.log.follow(after).pipe(
        Stream.mapChunks((batch) => {
          const end = EChunk.last(batch)
          if (Option.isSome(end)) {
            last = end.value.seq
            ended = end.value.type === "stop_reason"
          }
          return batch
        })
      )
      return Stream.concat(live, Stream.unwrap(Effect.suspend(() => (ended ? Effect.succeed(Stream.empty) : follow(runId, last)))))
    }
    const tail = options.tail
    if (tail === undefined) return followStored(store, runId, after)
    // The owner's notices wake it; a second is the bound for one that was missed.
    return Stream.unwrapScoped(Effect.map(tail.watch(runId), (next) => followStored(store, runId, after, 1_000, next)))
  })

  /** A run or a compaction is active on the conversation, here or in another process. */
  const isBusy = Effect.fn("Admission.isBusy")(function*(id: ConversationId) {
    return Option.isSome(yield* activeJob(id))
  })

  /**
   * Waits out a run's job live here: "ended" once the run has, "stopped" when the job stopped first
   * and left the run `running` — a job stopped by an earlier wait's interruption, still stopping when
   * this wait began — so the caller adopts the run again. Interrupting the wait stops the job without
   * recording a cancel, leaving the run to its next owner.
   */
  const awaitRun = Effect.fn("Admission.awaitRun")(function*(runId: RunId) {
    const job = yield* jobs.byRun(runId)
    const exit = Option.isSome(job) ? yield* Fiber.await(job.value.fiber).pipe(Effect.onInterrupt(() => Fiber.interrupt(job.value.fiber))) : undefined
    const running = (exit === undefined || Exit.isInterrupted(exit)) && (yield* store.getRun(runId)).status === "running"
    return running ? "stopped" as const : "ended" as const
  })

  return { jobs, send, compact, adopt, follow, isBusy, awaitRun } as const
})

export type Admissions = Effect.Effect.Success<ReturnType<typeof makeAdmissions>>
