/**
 * programs/backend/ is the stateful side of Baton: this module's local backend layer (the Backend
 * port over Store + Provider, in process), the conversation actor (its commands and its one handler:
 * ConversationActor; its job's admission: Admission, Jobs; hosted in this process by ActorRegistry,
 * in a cluster by ConversationEntity), the run (one model request and its reconnects: Run, StreamRequest), the
 * run log (commit, then publish; follow from a seq: RunLog), tool results committed as they finish
 * (Results), compaction (Compaction), the dead-run rule applied at start-up (DeadRuns) and the title
 * (Title), and forks (Fork). `baton serve` hosts the same layer; the
 * client side (programs/session) reaches it only through the Backend port.
 */
import { Channel, Context, type Duration, Effect, Layer, Stream } from "effect"
import { NotFound } from "../../domain/Errors.js"
import { ConversationId, type RunId } from "../../domain/Ids.js"
import { usageReport } from "../../domain/Usage.js"
import { type Budgets, turnBudgets } from "../../domain/Recovery.js"
import { Backend } from "../../services/Backend.js"
import { currentOwner } from "../../services/ProcessIdentity.js"
import { runInfo } from "../../domain/Run.js"
import { Store } from "../../services/Store.js"
import { Compactions } from "./Compaction.js"
import { DEFAULT_PASSIVATION, makeActorRegistry } from "./ActorRegistry.js"
import { Command, type Conversations, makeConversationActors, steeringOtid } from "./ConversationActor.js"
import { closeDeadRuns } from "./DeadRuns.js"
import { forkConversation } from "./Fork.js"
import { awaiting } from "./Results.js"
import { ContextCache } from "./ContextCache.js"
import { Runs } from "./Run.js"
import { Titles } from "./Title.js"

/**
 * The backend's programs, over the ports the caller provides. Built one after another in one layer:
 * as a merge of their Default layers (whose dependencies are layers again) they cost every start
 * ~3,000 Effect steps and 23 fibers, against ~850 and none (test/cli/StartupWork counts them).
 */
export const programs = Layer.scopedContext(Effect.gen(function*() {
  const contexts = yield* Layer.build(ContextCache.Default)
  const compactions = Context.merge(contexts, yield* Effect.provide(Layer.build(Compactions.DefaultWithoutDependencies), contexts))
  const runs = yield* Effect.provide(Layer.build(Runs.DefaultWithoutDependencies), compactions)
  return Context.merge(Context.merge(compactions, runs), yield* Layer.build(Titles.Default))
}))

/**
 * The stream `effect` makes, as Stream.unwrap, but in sequence rather than as a stream of streams:
 * Stream.unwrap runs the one inner stream under a concatMap, whose every pull passes through a
 * sub-executor; here the inner stream takes over the channel once the effect is done.
 */
const unwrap = <A, E, R, E2, R2>(effect: Effect.Effect<Stream.Stream<A, E, R>, E2, R2>): Stream.Stream<A, E | E2, R | R2> =>
  Stream.fromChannel(Channel.unwrap(Effect.map(effect, Stream.toChannel)))

/** The Backend over the conversations' actors: the Store answers reads, the actors every command. */
export const backendOver = Effect.fn("BackendLocal.over")(function*(conversations: Conversations) {
  const store = yield* Store
  const compactions = yield* Compactions
  const titles = yield* Titles
  // A send or a compaction answers with its run, streamed from its first chunk.
  const started = <E>(admitted: Effect.Effect<RunId, E>) =>
    unwrap(Effect.flatMap(admitted, (runId) => conversations.follow(runId, 0)))
  return Backend.of({
    createConversation: (settings, opts) => store.createConversation(settings, opts),
    getConversation: (id) => store.getConversation(id),
    listConversations: (opts) => store.listConversations(opts),
    updateConversation: (id, patch) => store.updateConversation(id, patch),
    send: (id, input) => started(conversations.ask(id, Command.Send({ input }))),
    getRun: (runId) => Effect.map(store.getRun(runId), runInfo),
    streamRun: (runId, opts) => unwrap(Effect.zipRight(store.getRun(runId), conversations.follow(runId, opts?.after ?? 0))),
    cancel: (id, carryOver) => conversations.ask(id, Command.Cancel({ carryOver })),
    submitResult: (id, result, opts) => conversations.ask(id, Command.SubmitResult({ result, decision: opts?.decision })),
    pendingApprovals: (id) => awaiting(store, id),
    history: (id, cursor) => store.listItems(id, cursor),
    backfill: (id) => store.backfill(id),
    skipReconnectWait: (id) => conversations.ask(id, Command.SkipReconnectWait()),
    compact: (id, reason) => started(conversations.ask(id, Command.Compact({ reason }))),
    compactability: Effect.fn("BackendLocal.compactability")(function*(id) {
      const conversation = yield* store.getConversation(id)
      return yield* compactions.compactability(conversation, yield* conversations.isBusy(id))
    }),
    generateTitle: titles.generate,
    fork: (id, opts) => Effect.provideService(forkConversation(id, opts), Store, store),
    steer: (id, text) => conversations.ask(id, Command.Steer({ text, otid: steeringOtid() })),
    heldSteering: (id) => store.heldSteering(id),
    takeSteering: (id) => store.takeSteering(id),
    usage: Effect.fn("BackendLocal.usage")(function*(query) {
      const records = yield* store.usage({
        ...(query?.conversationId !== undefined ? { conversationId: query.conversationId } : {}),
        ...(query?.since !== undefined ? { since: query.since } : {})
      })
      const ids = [...new Set(records.map((r) => r.conversation_id))]
      const titles = new Map<string, string>()
      yield* Effect.forEach(ids, (id) =>
        store.getConversation(ConversationId.make(id)).pipe(
          Effect.map((c) => void (c.title !== undefined && titles.set(id, c.title))),
          Effect.catchTag("NotFound", () => Effect.void)
        ), { discard: true })
      return usageReport(records, { pricing: query?.pricing, titles })
    }),
    exportTrace: Effect.fn("BackendLocal.exportTrace")(function*(id, segment) {
      const last = yield* store.currentSegment(id)
      if (!Number.isInteger(segment) || segment < 1 || segment > last) {
        return yield* new NotFound({
          entity: "segment",
          id: String(segment),
          message: `no trace segment ${segment}: conversation ${id} has segment${last === 1 ? " 1" : `s 1 to ${last}`}`
        })
      }
      return yield* store.exportSegment(id, segment)
    })
  })
})

export interface LocalOptions {
  readonly budgets?: Budgets
  /** How long an idle conversation's actor stays in memory (DEFAULT_PASSIVATION). */
  readonly passivation?: Duration.DurationInput
}

/** This process's conversations: each command to its actor in the registry. */
export const makeLocalConversations = Effect.fn("BackendLocal.conversations")(function*(options?: LocalOptions) {
  const actors = yield* makeConversationActors({ budgets: options?.budgets ?? turnBudgets, owner: currentOwner() })
  const registry = yield* makeActorRegistry(actors, { idleTime: options?.passivation ?? DEFAULT_PASSIVATION, takeover: false })
  const conversations: Conversations = { ask: registry.ask, follow: actors.follow, isBusy: actors.isBusy }
  return { conversations, registry } as const
})

/**
 * The in-process backend: conversation actors over Store + Provider. At start-up, runs left
 * `running` by a process that died are closed as failed, so no conversation stays stuck busy.
 */
export const makeBackendLocal = Effect.fn("BackendLocal.make")(
  function*(options?: LocalOptions) {
    yield* closeDeadRuns()
    return yield* backendOver((yield* makeLocalConversations(options)).conversations)
  },
  Effect.provide(programs)
)

export const layerLocal = (options?: LocalOptions) => Layer.scoped(Backend, makeBackendLocal(options))
