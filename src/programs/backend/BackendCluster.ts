import type { AlreadyProcessingMessage, MailboxFull, PersistenceError } from "@effect/cluster/ClusterError"
import * as EntityId from "@effect/cluster/EntityId"
import { Sharding } from "@effect/cluster/Sharding"
import { type Duration, Effect, ExecutionStrategy, Layer, Scope } from "effect"
import type { ConversationId, RunId } from "../../domain/Ids.js"
import { type BackendError, StoreError } from "../../domain/Errors.js"
import { type Budgets, turnBudgets } from "../../domain/Recovery.js"
import { Backend } from "../../services/Backend.js"
import type { Provider } from "../../services/Provider.js"
import { realClock } from "../../services/RealClock.js"
import { RunTail } from "../../services/RunTail.js"
import { Store as Store } from "../../services/Store.js"
import { makeActorRegistry } from "./ActorRegistry.js"
import { backendOver, programs } from "./BackendLocal.js"
import { Command, makeConversationActors, type Reply } from "./ConversationActor.js"
import { ConversationEntity, layerHandlers } from "./ConversationEntity.js"
import { sweepStaleRuns } from "./StaleRuns.js"

export interface ClusterBackendOptions {
  /** This runner's address (`host:port`), recorded as the owner of every run it starts or resumes. */
  readonly runner: string
  readonly budgets?: Budgets
  /**
   * How often this runner looks for runs of its conversations that nobody drives (a Drive the
   * cluster read but did not deliver) and resumes them; none, no sweep. Kept by the backend's clock.
   */
  readonly sweepEvery?: Duration.DurationInput
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
 * The clustered backend (`baton serve --cluster`): the same conversation actors, each command now
 * an entity message to the runner that owns the conversation's shard (this process or another on
 * the same database), whose entity hands it to its actor. Reads go to the Store, which every runner
 * shares. A run's stream is its live log on the runner that runs it, and on any other runner the
 * Store followed as the owner's notices arrive (RunTail), with the same resume-after-seq contract.
 * A run outlives its runner: the Drive its send left is delivered to the conversation's next owner,
 * whose actor adopts it.
 */
export const makeBackendCluster = Effect.fn("BackendCluster.make")(
  function*(options: ClusterBackendOptions) {
    const tail = yield* RunTail
    const clock = yield* Effect.clock
    const scope = yield* Effect.scope
    // The actors' scope closes after the entity's (finalizers run last-added first): at shutdown the
    // entity stops while its Drives are still waiting, so the cluster keeps them for the next owner
    // instead of recording their runs' jobs as ended.
    const actorsScope = yield* Scope.fork(scope, ExecutionStrategy.sequential)
    const actors = yield* makeConversationActors({ budgets: options.budgets ?? turnBudgets, owner: options.runner, tail })
    // An actor lives while its entity holds it (or its job runs): the entity's own idle time passivates both.
    const registry = yield* makeActorRegistry(actors, { idleTime: "1 second", takeover: true }).pipe(Scope.extend(actorsScope))
    // The entity's machinery (its mailboxes, its idle reaper) keeps the wall clock; its jobs keep `clock`.
    yield* Layer.buildWithScope(layerHandlers(actors, registry, clock), scope).pipe(Effect.withClock(realClock))
    const client = yield* ConversationEntity.client
    if (options.sweepEvery !== undefined) {
      const sharding = yield* Sharding
      const store = yield* Store
      yield* sweepStaleRuns({
        store,
        holds: (id) => {
          const entityId = EntityId.make(id)
          return sharding.hasShardId(sharding.getShardId(entityId, ConversationEntity.getShardGroup(entityId)))
        },
        hasJob: actors.hasJob,
        resume: (run) =>
          delivered(client(run.conversationId).Resume({ runId: run.id }, { discard: true })).pipe(
            Effect.catchAll((e) => Effect.logWarning(`could not resume run ${run.id}`, e))
          )
      }, options.sweepEvery)
    }
    const ask = <C extends Command>(id: ConversationId, command: C): Effect.Effect<Reply<C>, BackendError> => {
      const conversation = client(id)
      const sent: Effect.Effect<RunId | void, BackendError | Undelivered> = Command.$match(command as Command, {
        Send: ({ input }) => conversation.Send({ input }),
        Compact: ({ reason }) => conversation.Compact({ reason }),
        Cancel: ({ carryOver }) => conversation.Cancel({ carryOver }),
        SubmitResult: ({ decision, result }) => conversation.SubmitResult({ result, decision }),
        Steer: (steer) => conversation.Steer({ text: steer.text, otid: steer.otid }),
        SkipReconnectWait: () => conversation.SkipReconnectWait(),
        Adopt: ({ runId, thinking }) => conversation.Drive({ runId, thinking }, { discard: true })
      })
      return delivered(sent) as Effect.Effect<Reply<C>, BackendError>
    }
    return yield* backendOver({ ask, follow: actors.follow, isBusy: actors.isBusy })
  },
  Effect.provide(programs)
)

export const layerCluster = (options: ClusterBackendOptions): Layer.Layer<Backend, never, Store | Provider | RunTail | Sharding> =>
  Layer.scoped(Backend, makeBackendCluster(options))
