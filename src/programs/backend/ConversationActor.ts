import { Data, Deferred, Effect, Fiber, Mailbox, Option, Ref, type Scope, type Stream } from "effect"
import type { CarryOver } from "../../domain/CarryOver.js"
import { closeCalls } from "../../domain/CarryOver.js"
import type { BackendError, StoreError } from "../../domain/Errors.js"
import { busyWith, InvalidInput } from "../../domain/Errors.js"
import type { ApprovalDecision, Chunk, CompactionReason } from "../../domain/Events.js"
import type { NewItem } from "../../domain/History.js"
import { type ConversationId, Otid, type RunId } from "../../domain/Ids.js"
import type { ToolReturn, UserMessage } from "../../domain/Messages.js"
import type { ThinkingLevel } from "../../domain/ProviderEvent.js"
import { activityOf, type SendInput } from "../../domain/Run.js"
import { STEERING_OTID_PREFIX, steeringText } from "../../domain/Tags.js"
import { Store } from "../../services/Store.js"
import { type Admissions, makeAdmissions } from "./Admission.js"
import { ContextCache } from "./ContextCache.js"
import { refuseIdleSteering } from "./IdleSteering.js"
import { openTurn, submitResult as commitResult } from "./Results.js"

/** A new steering message's otid (the prefix marks it as steering wherever it is recorded). */
export const steeringOtid = (): Otid => Otid.make(`${STEERING_OTID_PREFIX}${crypto.randomUUID()}`)

/**
 * A conversation's commands: everything that changes it goes through its actor's inbox, one at a
 * time, in the order they arrived. Reads (history, a run's stream, `isBusy`) do not: they go to the
 * Store and the live jobs.
 */
export type Command = Data.TaggedEnum<{
  /** Starts a run for `input`, or answers the run its otid already started. */
  Send: { readonly input: SendInput }
  /** Starts a compaction as the conversation's one job. */
  Compact: { readonly reason: CompactionReason }
  /** Stops the active job and commits the carry-over, in one turn: nothing is admitted in between. */
  Cancel: { readonly carryOver: CarryOver | undefined }
  /** Commits one tool result as its tool finished (see Results.submitResult). */
  SubmitResult: { readonly result: ToolReturn; readonly decision: ApprovalDecision | undefined }
  /** Queues steering for the active run's next input assembly; its otid is the caller's (a redelivery queues it once). */
  Steer: { readonly text: string; readonly otid: Otid }
  /** Ends the active job's reconnect wait now. */
  SkipReconnectWait: {}
  /**
   * Makes a run left `running` by a lost runner this process's job, resumed from its committed
   * chunks as a reconnect (a compaction is closed as failed instead); nothing if it is live or over.
   */
  Adopt: { readonly runId: RunId; readonly thinking: ThinkingLevel | undefined }
}>
export const Command = Data.taggedEnum<Command>()

export interface Replies {
  readonly Send: RunId
  readonly Compact: RunId
  readonly Cancel: void
  readonly SubmitResult: void
  readonly Steer: void
  readonly SkipReconnectWait: void
  readonly Adopt: void
}
export type Reply<C extends Command> = Replies[C["_tag"]]
type AnyReply = Replies[Command["_tag"]]

export interface Actor {
  /** Queues `command` in the inbox; its turn's reply comes later (what a caller ordering several commands uses). */
  readonly enqueue: <C extends Command>(command: C) => Effect.Effect<Effect.Effect<Reply<C>, BackendError>>
  /** Queues `command` in the inbox and waits for its turn's reply. */
  readonly ask: <C extends Command>(command: C) => Effect.Effect<Reply<C>, BackendError>
}

/** Where an actor lives: the two hosts (one process, a cluster's entity) differ only here. */
export interface Hosting {
  /** Held by each job while it runs, so the host never passivates an actor that has one. */
  readonly keepAlive: Effect.Effect<void, never, Scope.Scope>
  /**
   * The actor may start on a runner that took the conversation over: before its first command it
   * adopts the run a lost runner left `running` (unless that command is the Adopt itself).
   */
  readonly takeover: boolean
}

interface Envelope {
  readonly command: Command
  readonly reply: Deferred.Deferred<AnyReply, BackendError>
}

/**
 * The conversation actor's behaviour, written once for both hosts: `actor(id, hosting)` is one
 * conversation's inbox drained by one fiber in the caller's scope, its job a child fiber in the same
 * scope, so a Cancel, a result or a steer is taken while the job streams. No lock spans
 * conversations: two of them share only the Store's capacity.
 */
export const makeConversationActors = Effect.fn("ConversationActor.make")(function*(options: Parameters<typeof makeAdmissions>[0]) {
  const store = yield* Store
  const contexts = yield* ContextCache
  const admissions: Admissions = yield* makeAdmissions(options)
  const { jobs } = admissions

  const cancel = Effect.fn("ConversationActor.cancel")(function*(id: ConversationId, carryOver: CarryOver | undefined) {
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
    // In the same turn as the stop: a send queued behind this cancel is admitted after the carry-over, which its request carries.
    const { held, pending } = yield* openTurn(store, id)
    const items: ReadonlyArray<NewItem> = closeCalls(pending, carryOver, held)
    if (items.length > 0) yield* store.commit({ conversationId: id, items }).pipe(Effect.catchTag("ChunkSeqError", Effect.die))
  })

  const submitResult = Effect.fn("ConversationActor.submitResult")(function*(id: ConversationId, result: ToolReturn, decision: ApprovalDecision | undefined) {
    // In the inbox's order: a result and a run's input, or a cancel, never both answer one call.
    const job = yield* jobs.get(id)
    const streamed = Option.isSome(job) && (yield* Ref.get(job.value.calls)).has(result.tool_call_id)
    yield* commitResult(store, id, result, { decision, streamedBy: streamed && Option.isSome(job) ? job.value.runId : undefined })
  })

  const steer = Effect.fn("ConversationActor.steer")(function*(id: ConversationId, text: string, otid: Otid) {
    if (text.trim() === "") return yield* new InvalidInput({ message: "steering needs some text" })
    // This actor's own turn run is a task running: only without one does the store have to tell.
    const job = yield* jobs.get(id)
    if (!(Option.isSome(job) && job.value.kind === "run")) yield* refuseIdleSteering(store, id)
    const message: UserMessage = { type: "user_message", content: steeringText(text), otid }
    yield* store.queueSteering(id, message)
  })

  const skipReconnectWait = Effect.fn("ConversationActor.skipReconnectWait")(function*(id: ConversationId) {
    const job = yield* jobs.get(id)
    if (Option.isSome(job)) yield* Deferred.succeed(yield* Ref.get(job.value.skip), undefined)
  })

  /** One turn: the command's whole effect on the conversation, before the next command is taken. */
  const handle = (id: ConversationId, hosting: Hosting, scope: Scope.Scope) => (command: Command): Effect.Effect<AnyReply, BackendError> =>
    Command.$match(command, {
      Send: ({ input }) => admissions.send(id, input, scope, hosting.keepAlive),
      Compact: ({ reason }) => admissions.compact(id, reason, scope, hosting.keepAlive),
      Cancel: ({ carryOver }) => cancel(id, carryOver),
      SubmitResult: ({ decision, result }) => submitResult(id, result, decision),
      Steer: ({ otid, text }) => steer(id, text, otid),
      SkipReconnectWait: () => skipReconnectWait(id),
      Adopt: ({ runId, thinking }) => admissions.adopt(runId, thinking, scope, hosting.keepAlive)
    })

  /** One conversation's actor, living in the caller's scope: closing it stops the job (no cancel recorded). */
  const actor = Effect.fn("ConversationActor.start")(function*(id: ConversationId, hosting: Hosting) {
    const scope = yield* Effect.scope
    const mailbox = yield* Mailbox.make<Envelope>()
    const turn = handle(id, hosting, scope)
    // The takeover step: the run a lost runner left is this actor's job before any cancel or result reaches it.
    let adopted = !hosting.takeover
    const startUp = (command: Command): Effect.Effect<void, BackendError> =>
      adopted || command._tag === "Adopt"
        ? Effect.void
        : Effect.flatMap(store.activeRun(id), (active) =>
          Option.match(active, {
            onNone: () => Effect.void,
            onSome: (run) => admissions.adopt(run.id, undefined, scope, hosting.keepAlive)
          })).pipe(Effect.tap(() => Effect.sync(() => void (adopted = true))))
    // Commands still queued when the actor stops are answered (interrupted), never left waiting; a
    // passivated conversation's context leaves memory with it (the next command reads it again).
    yield* Effect.addFinalizer(() =>
      Effect.zipRight(mailbox.end, Effect.flatMap(mailbox.clear, (left) => Effect.forEach(left, (e) => Deferred.interrupt(e.reply), { discard: true }))).pipe(
        Effect.zipRight(contexts.drop(id))
      )
    )
    yield* mailbox.take.pipe(
      Effect.flatMap(({ command, reply }) =>
        Effect.zipRight(startUp(command), turn(command)).pipe(
          Effect.onExit((exit) => Deferred.done(reply, exit)),
          // The turn's failure, even a defect, is its caller's: the actor goes on to the next command.
          Effect.catchAllCause(() => Effect.void)
        )),
      Effect.forever,
      Effect.forkScoped
    )
    const enqueue = <C extends Command>(command: C) =>
      Effect.gen(function*() {
        const reply = yield* Deferred.make<AnyReply, BackendError>()
        const queued = yield* mailbox.offer({ command, reply })
        // The reply's type is the command's: `handle` answers each tag with its own Replies entry.
        return (queued ? Deferred.await(reply) : Effect.interrupt) as Effect.Effect<Reply<C>, BackendError>
      })
    const self: Actor = { enqueue, ask: (command) => Effect.flatten(enqueue(command)) }
    return self
  })

  /** A job of the run is live in this process. */
  const hasJob = (runId: RunId) => Effect.map(admissions.jobs.byRun(runId), Option.isSome)

  return { actor, follow: admissions.follow, isBusy: admissions.isBusy, awaitRun: admissions.awaitRun, hasJob } as const
})

export type ConversationActors = Effect.Effect.Success<ReturnType<typeof makeConversationActors>>

/**
 * How the Backend reaches conversations: a command to a conversation's actor, and the reads that
 * need no turn. In one process the actor is in this process's registry; in a cluster the command is
 * an entity message to whichever runner owns the conversation.
 */
export interface Conversations {
  readonly ask: <C extends Command>(id: ConversationId, command: C) => Effect.Effect<Reply<C>, BackendError>
  /** A live run from this process's log, any other from the Store. */
  readonly follow: (runId: RunId, after: number) => Effect.Effect<Stream.Stream<Chunk, BackendError>>
  /** A run or a compaction is active on the conversation, here or in another process. */
  readonly isBusy: (id: ConversationId) => Effect.Effect<boolean, StoreError>
}
