import { type Duration, Effect, RcMap, type Scope } from "effect"
import type { ConversationId } from "../../domain/Ids.js"
import type { Actor, Command, ConversationActors } from "./ConversationActor.js"

/** How long an actor with nothing to do stays in memory in one process (its next command re-activates it from the Store). */
export const DEFAULT_PASSIVATION = "30 seconds"

/**
 * This process's live conversation actors, keyed by conversation: an actor is activated by its
 * first command and passivated once it has been idle for `idleTime` — no command in its inbox, no
 * job, no holder (a cluster's entity holds its actor while it lives). Passivated, nothing of it is
 * left but what the Store has. Activating one conversation never waits for another's.
 */
export const makeActorRegistry = Effect.fn("ActorRegistry.make")(function*(
  actors: ConversationActors,
  options: {
    readonly idleTime: Duration.DurationInput
    /** The runner may have taken its conversations over from a lost one (a cluster). */
    readonly takeover: boolean
  }
) {
  const keepAlive = (id: ConversationId): Effect.Effect<void, never, Scope.Scope> => Effect.suspend(() => Effect.asVoid(RcMap.get(registry, id)))
  const registry: RcMap.RcMap<ConversationId, Actor> = yield* RcMap.make({
    lookup: (id: ConversationId) => actors.actor(id, { keepAlive: keepAlive(id), takeover: options.takeover }),
    idleTimeToLive: options.idleTime
  })
  return {
    /** Hands `command` to the conversation's actor (activating it) and waits for its turn's reply. */
    ask: <C extends Command>(id: ConversationId, command: C) =>
      Effect.scoped(Effect.flatMap(RcMap.get(registry, id), (actor) => actor.ask(command))),
    /** Queues `command` in the conversation's inbox now; the reply (waited for in the caller's scope, which holds the actor) later. */
    enqueue: <C extends Command>(id: ConversationId, command: C) => Effect.flatMap(RcMap.get(registry, id), (actor) => actor.enqueue(command)),
    /** Keeps the conversation's actor alive for the caller's scope. */
    hold: keepAlive,
    /** How many actors are live in this process (a passivated one is not). */
    live: Effect.map(RcMap.keys(registry), (keys) => keys.length)
  }
})

export type ActorRegistry = Effect.Effect.Success<ReturnType<typeof makeActorRegistry>>
