import type { AlreadyProcessingMessage, MailboxFull, PersistenceError } from "@effect/cluster/ClusterError"
import type { Sharding } from "@effect/cluster/Sharding"
import { Effect, ExecutionStrategy, Layer, Scope, Stream } from "effect"
import { type BackendError, StoreError } from "../../domain/Errors.js"
import { type Budgets, turnBudgets } from "../../domain/Recovery.js"
import { Backend } from "../../services/Backend.js"
import type { Provider } from "../../services/Provider.js"
import { realClock } from "../../services/RealClock.js"
import { RunTail } from "../../services/RunTail.js"
import type { Store } from "../../services/Store.js"
import { backendOver, programs } from "./BackendLocal.js"
import { makeActors } from "./ConversationActors.js"
import { ConversationEntity, layerHandlers } from "./ConversationEntity.js"

export interface ClusterBackendOptions {
  /** This runner's address (`host:port`), recorded as the owner of every run it starts or resumes. */
  readonly runner: string
  readonly budgets?: Budgets
}

type Undelivered = MailboxFull | AlreadyProcessingMessage | PersistenceError

/** What the cluster could not deliver, as the Store failing (the cluster's storage is the Store's database). */
const delivered = <A>(effect: Effect.Effect<A, BackendError | Undelivered>): Effect.Effect<A, BackendError> =>
  effect.pipe(
    Effect.catchTags({
      MailboxFull: (e) => Effect.fail(new StoreError({ reason: "io", message: `conversation ${e.address.entityId} has too many requests waiting` })),
      AlreadyProcessingMessage: (e) => Effect.fail(new StoreError({ reason: "io", message: `conversation ${e.address.entityId} is already handling this request` })),
      PersistenceError: (e) => Effect.fail(new StoreError({ reason: "io", message: `the cluster could not store the request: ${String(e.cause)}` }))
    }),
    // Waiting for a reply is the network's time, not a run's (a test's clock drives only the runs).
    Effect.withClock(realClock)
  )

/**
 * The clustered backend (`baton serve --cluster`): the same conversation actors, now behind the
 * `Conversation` entity. Every command is sent to the conversation's entity, wherever its shard lives
 * (this process or another runner on the same database); reads go to the Store, which every runner
 * shares. A run's stream is its live log on the runner that runs it, and on any other runner the
 * Store followed as the owner's notices arrive (RunTail), with the same resume-after-seq contract.
 * Runs left `running` are not closed at start-up as on one machine: they belong to whichever runner
 * owns their shard, which resumes them (ConversationEntity's Drive).
 */
export const makeBackendCluster = Effect.fn("BackendCluster.make")(
  function*(options: ClusterBackendOptions) {
    const tail = yield* RunTail
    const clock = yield* Effect.clock
    const scope = yield* Effect.scope
    // The jobs' scope closes after the entity's (finalizers run last-added first): at shutdown the
    // entity stops while its Drives are still waiting, so the cluster keeps them for the next owner
    // instead of recording their runs' jobs as ended.
    const jobs = yield* Scope.fork(scope, ExecutionStrategy.sequential)
    const actors = yield* makeActors({ budgets: options.budgets ?? turnBudgets, owner: options.runner, tail }).pipe(Scope.extend(jobs))
    // The entity's machinery (its mailboxes, its idle reaper) keeps the wall clock; its jobs keep `clock`.
    yield* Layer.buildWithScope(layerHandlers(actors, clock), scope).pipe(Effect.withClock(realClock))
    const local = yield* backendOver(actors)
    const conversation = yield* ConversationEntity.client
    return Backend.of({
      ...local,
      send: (id, input) =>
        Stream.unwrap(Effect.flatMap(delivered(conversation(id).Send({ input })), (runId) => actors.follow(runId, 0))),
      cancel: (id, carryOver) => delivered(conversation(id).Cancel({ carryOver: carryOver ?? {} })),
      submitResult: (id, result, opts) =>
        delivered(conversation(id).SubmitResult({ result, ...(opts?.decision !== undefined ? { decision: opts.decision } : {}) })),
      skipReconnectWait: (id) => delivered(conversation(id).SkipReconnectWait()),
      compact: (id, reason) =>
        Stream.unwrap(Effect.flatMap(delivered(conversation(id).Compact({ reason })), (runId) => actors.follow(runId, 0)))
    })
  },
  Effect.provide(programs)
)

export const layerCluster = (options: ClusterBackendOptions): Layer.Layer<Backend, never, Store | Provider | RunTail | Sharding> =>
  Layer.scoped(Backend, makeBackendCluster(options))
