/**
 * programs/backend/ is the stateful side of Baton: this module's local backend layer (the Backend
 * port over Store + Provider, in process), the conversation actors (one job per conversation:
 * ConversationActors, Jobs), the run (one model request and its reconnects: Run, StreamRequest), the
 * run log (commit, then publish; follow from a seq: RunLog), tool results committed as they finish
 * (Results), compaction (Compaction), the dead-run rule applied at start-up (DeadRuns) and the title
 * (Title), and forks (Fork). `baton serve` hosts the same layer; the
 * client side (programs/session) reaches it only through the Backend port.
 */
import { Effect, Layer, Stream } from "effect"
import { InvalidInput, NotFound } from "../../domain/Errors.js"
import { ConversationId, Otid } from "../../domain/Ids.js"
import type { UserMessage } from "../../domain/Messages.js"
import { STEERING_OTID_PREFIX, steeringText } from "../../domain/Tags.js"
import { usageReport } from "../../domain/Usage.js"
import { type Budgets, turnBudgets } from "../../domain/Recovery.js"
import { Backend } from "../../services/Backend.js"
import { currentOwner } from "../../services/ProcessIdentity.js"
import { runInfo } from "../../domain/Run.js"
import { Store } from "../../services/Store.js"
import { Compactions } from "./Compaction.js"
import { type Actors, makeActors } from "./ConversationActors.js"
import { closeDeadRuns } from "./DeadRuns.js"
import { forkConversation } from "./Fork.js"
import { refuseIdleSteering } from "./IdleSteering.js"
import { awaiting } from "./Results.js"
import { Runs } from "./Run.js"
import { Titles } from "./Title.js"

/** The backend's programs, over the ports the caller provides. */
export const programs = Layer.mergeAll(Runs.Default, Compactions.Default, Titles.Default)

/** The Backend over these actors: the Store answers reads, the actors every command. */
export const backendOver = Effect.fn("BackendLocal.over")(function*(actors: Actors) {
  const store = yield* Store
  const compactions = yield* Compactions
  const titles = yield* Titles
  return Backend.of({
    createConversation: (settings, opts) => store.createConversation(settings, opts),
    getConversation: (id) => store.getConversation(id),
    listConversations: (opts) => store.listConversations(opts),
    updateConversation: (id, patch) => store.updateConversation(id, patch),
    send: (id, input) => Stream.unwrap(actors.send(id, input)),
    getRun: (runId) => Effect.map(store.getRun(runId), runInfo),
    streamRun: (runId, opts) => Stream.unwrap(Effect.zipRight(store.getRun(runId), actors.follow(runId, opts?.after ?? 0))),
    cancel: actors.cancel,
    submitResult: (id, result, opts) => actors.submitResult(id, result, opts?.decision),
    pendingApprovals: (id) => awaiting(store, id),
    history: (id, cursor) => store.listItems(id, cursor),
    backfill: (id) => store.backfill(id),
    skipReconnectWait: actors.skipReconnectWait,
    compact: (id, reason) => Stream.unwrap(actors.compact(id, reason)),
    compactability: Effect.fn("BackendLocal.compactability")(function*(id) {
      const conversation = yield* store.getConversation(id)
      return yield* compactions.compactability(conversation, yield* actors.isBusy(id))
    }),
    generateTitle: titles.generate,
    fork: (id, opts) => Effect.provideService(forkConversation(id, opts), Store, store),
    steer: Effect.fn("BackendLocal.steer")(function*(id, text) {
      if (text.trim() === "") return yield* new InvalidInput({ message: "steering needs some text" })
      yield* refuseIdleSteering(store, id)
      const message: UserMessage = { type: "user_message", content: steeringText(text), otid: Otid.make(`${STEERING_OTID_PREFIX}${crypto.randomUUID()}`) }
      yield* store.queueSteering(id, message)
    }),
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

/**
 * The in-process backend: conversation actors over Store + Provider. At start-up, runs left
 * `running` by a process that died are closed as failed, so no conversation stays stuck busy.
 */
export const makeBackendLocal = Effect.fn("BackendLocal.make")(
  function*(options?: { readonly budgets?: Budgets }) {
    yield* closeDeadRuns()
    return yield* backendOver(yield* makeActors({ budgets: options?.budgets ?? turnBudgets, owner: currentOwner() }))
  },
  Effect.provide(programs)
)

export const layerLocal = (options?: { readonly budgets?: Budgets }) => Layer.scoped(Backend, makeBackendLocal(options))
