import { Cause, Deferred, Effect, Either, Fiber, Option, Ref, type Scope, Stream } from "effect"
import type { BackendError } from "../../domain/Errors.js"
import { busyWith, InvalidInput } from "../../domain/Errors.js"
import type { Chunk, CompactionReason } from "../../domain/Events.js"
import { type ConversationId, Otid, type RunId } from "../../domain/Ids.js"
import { validateInput } from "../../domain/InputValidation.js"
import type { Budgets } from "../../domain/Recovery.js"
import type { CarryOver } from "../../domain/CarryOver.js"
import { activityOf, type SendInput } from "../../domain/Run.js"
import type { Provider } from "../../services/Provider.js"
import type { NewItem } from "../../domain/History.js"
import type { Store } from "../../services/Store.js"
import { closeCalls } from "../../domain/CarryOver.js"
import { skippableWait } from "../../domain/RecoverySchedule.js"
import { type Job, type Jobs, makeJobs } from "./Jobs.js"
import { followStored, makeRunFeed } from "./RunFeed.js"
import { makeRunWriter, type RunWriter } from "./RunWriter.js"
import { runCompaction } from "./Compaction.js"
import { runTurn } from "./Run.js"

export interface Actors {
  readonly send: (id: ConversationId, input: SendInput) => Stream.Stream<Chunk, BackendError>
  readonly follow: (runId: RunId, after: number) => Stream.Stream<Chunk, BackendError>
  readonly cancel: (id: ConversationId, carryOver?: CarryOver) => Effect.Effect<void, BackendError>
  readonly skipReconnectWait: (id: ConversationId) => Effect.Effect<void>
  /** A compaction as the conversation's one active job; its stream ends with a stop_reason. */
  readonly compact: (id: ConversationId, reason: CompactionReason) => Stream.Stream<Chunk, BackendError>
  /** Runs `job` as the conversation's one active job (compaction uses this too). */
  readonly startJob: <E>(
    id: ConversationId,
    kind: Job["kind"],
    admit: {
      /** A run this request already started (its otid): followed, never a Conflict with itself. */
      readonly existing?: Effect.Effect<Option.Option<RunId>, E>
      readonly create: Effect.Effect<{ readonly runId: RunId; readonly lastSeq: number }, E>
    },
    body: (writer: RunWriter, job: Pick<Job, "cancelRequested" | "skip">, onStopped: Effect.Effect<void>) => Effect.Effect<void, unknown>
  ) => Effect.Effect<RunId, E | BackendError>
  readonly jobs: Jobs
}

/**
 * Conversation actors: at most one job per conversation, admitted under a short critical section,
 * running in the backend's scope (not the caller's), so a reader that goes away stops nothing.
 */
export const makeActors = (deps: {
  readonly store: Store["Type"]
  readonly provider: Provider["Type"]
  readonly budgets: Budgets
  /** Recorded on every run this process starts (see ProcessIdentity). */
  readonly owner: string
}): Effect.Effect<Actors, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { store } = deps
    const scope = yield* Effect.scope
    const jobs = yield* makeJobs
    // Admission is a few index lookups on one connection; one lock keeps it simple and race-free.
    const admission = yield* Effect.makeSemaphore(1)

    const busy = (id: ConversationId) =>
      Effect.gen(function*() {
        const job = yield* jobs.get(id)
        if (Option.isSome(job)) return yield* busyWith(id, job.value.runId, job.value.kind)
        const active = yield* store.activeRun(id)
        if (Option.isSome(active)) return yield* busyWith(id, active.value.id, activityOf(active.value.kind))
      })

    const startJob: Actors["startJob"] = (id, kind, admit, body) =>
      admission.withPermits(1)(
        Effect.gen(function*() {
          const existing = admit.existing !== undefined ? yield* admit.existing : Option.none<RunId>()
          if (Option.isSome(existing)) return existing.value
          yield* busy(id)
          const { lastSeq, runId } = yield* admit.create
          const feed = yield* makeRunFeed(store, runId)
          const writer = yield* makeRunWriter(store, feed, id, runId, lastSeq)
          const cancelRequested = yield* Ref.make(false)
          const skip = yield* Ref.make(yield* Deferred.make<void>())
          const go = yield* Deferred.make<void>()
          const onStopped = jobs.remove(id, runId)
          const fiber = yield* Deferred.await(go).pipe(
            Effect.zipRight(body(writer, { cancelRequested, skip }, onStopped)),
            Effect.catchAllCause((cause) => Effect.logError(`${kind} ${runId} failed`, cause)),
            Effect.ensuring(onStopped),
            Effect.forkIn(scope)
          )
          yield* jobs.add({ conversationId: id, runId, kind, feed, fiber, cancelRequested, skip })
          yield* Deferred.succeed(go, undefined)
          return runId
        })
      )

    const follow: Actors["follow"] = (runId, after) =>
      Stream.unwrap(
        Effect.map(jobs.byRun(runId), (job) => (Option.isSome(job) ? job.value.feed.follow(after) : followStored(store, runId, after)))
      )

    const send: Actors["send"] = (id, input) =>
      Stream.unwrap(
        Effect.gen(function*() {
          const first = input.messages[0]
          if (first === undefined) return yield* new InvalidInput({ message: "a run needs at least one input message" })
          const conversation = yield* store.getConversation(id)
          const create = Effect.gen(function*() {
            const pending = yield* store.pendingApprovals(id)
            const ordered = yield* Either.match(validateInput(id, input.messages, pending), {
              onLeft: Effect.fail,
              onRight: Effect.succeed
            })
            const { run } = yield* store.createRun(id, first.otid, "turn", { owner: deps.owner })
            const events: ReadonlyArray<NewItem> = (input.events ?? []).map((item) => ({ item: { ...item, run_id: run.id } }))
            yield* store.commit({
              conversationId: id,
              items: [...events, ...ordered.map((message): NewItem => ({ item: { ...message, run_id: run.id } }))]
            }).pipe(Effect.catchTag("ChunkSeqError", Effect.die))
            return { runId: run.id, lastSeq: run.lastSeq }
          })
          const runId = yield* startJob(
            id,
            "run",
            {
              // Checked inside admission: two sends of one otid, even concurrent, share one run.
              existing: Effect.map(store.runByOtid(id, first.otid), Option.map((run) => run.id)),
              create
            },
            (writer, job, onStopped) =>
              runTurn({
                store,
                provider: deps.provider,
                writer,
                conversation,
                thinking: input.thinking,
                budgets: deps.budgets,
                waitRetry: skippableWait(job.skip),
                onStopped,
                cancelRequested: Ref.get(job.cancelRequested),
                compact: (reason) =>
                  runCompaction({ store, provider: deps.provider, writer, conversation, reason, waitRetry: skippableWait(job.skip) })
              })
          )
          return follow(runId, 0)
        })
      )

    const cancel: Actors["cancel"] = (id, carryOver) =>
      Effect.gen(function*() {
        const job = yield* jobs.get(id)
        if (Option.isSome(job)) {
          yield* Ref.set(job.value.cancelRequested, true)
          yield* Fiber.interrupt(job.value.fiber)
        }
        yield* admission.withPermits(1)(
          Effect.gen(function*() {
            // A run another process owns cannot be stopped from here; recording around it would interleave with it.
            const foreign = yield* store.activeRun(id)
            if (Option.isSome(foreign)) {
              const { id: runId, kind } = foreign.value
              return yield* busyWith(id, runId, activityOf(kind), `run ${runId} belongs to another Baton process; stop it there`)
            }
            const pending = yield* store.pendingApprovals(id)
            const items: ReadonlyArray<NewItem> = closeCalls(pending, carryOver)
            if (items.length > 0) {
              yield* store.commit({ conversationId: id, items }).pipe(Effect.catchTag("ChunkSeqError", Effect.die))
            }
          })
        )
      })

    const skipReconnectWait: Actors["skipReconnectWait"] = (id) =>
      Effect.flatMap(jobs.get(id), (job) =>
        Option.isSome(job) ? Effect.flatMap(Ref.get(job.value.skip), (signal) => Deferred.succeed(signal, undefined)) : Effect.void)

    const compact: Actors["compact"] = (id, reason) =>
      Stream.unwrap(
        Effect.gen(function*() {
          const conversation = yield* store.getConversation(id)
          const runId = yield* startJob(
            id,
            "compaction",
            {
              create: Effect.map(
                store.createRun(id, Otid.make(`compaction-${crypto.randomUUID()}`), "compaction", { owner: deps.owner }),
                ({ run }) => ({ runId: run.id, lastSeq: run.lastSeq })
              )
            },
            (writer, job, onStopped) =>
              Effect.gen(function*() {
                const outcome = yield* runCompaction({ store, provider: deps.provider, writer, conversation, reason, waitRetry: skippableWait(job.skip) }).pipe(
                  Effect.catchAllCause((cause) =>
                    Cause.isInterruptedOnly(cause)
                      ? Effect.failCause(cause)
                      : Effect.as(Effect.logError("compaction failed unexpectedly", cause), "failed" as const)
                  )
                )
                yield* writer.emit([{ event: { type: "stop_reason", reason: outcome === "ok" ? "end_turn" : "error" }, record: "item" }], {
                  finish: { status: outcome === "ok" ? "completed" : "failed", stopReason: outcome === "ok" ? "end_turn" : "error", onCommitted: onStopped }
                })
              })
          )
          return follow(runId, 0)
        })
      )

    return { send, follow, cancel, skipReconnectWait, startJob, jobs, compact }
  })
