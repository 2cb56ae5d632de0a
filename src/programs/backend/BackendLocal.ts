import { Effect, Layer, Option, Stream } from "effect"
import { type Budgets, turnBudgets } from "../../domain/Recovery.js"
import { makeActors } from "./ConversationActors.js"
import { closeDeadRun } from "./DeadRuns.js"
import { compactability } from "./CompactionTrigger.js"
import { generateTitle } from "./Title.js"
import { Backend } from "../../services/Backend.js"
import { currentOwner, ownerAlive } from "../../services/ProcessIdentity.js"
import { Provider } from "../../services/Provider.js"
import { Store } from "../../services/Store.js"

/**
 * The in-process backend: conversation actors over Store + Provider. At start-up, runs left
 * `running` by a process that died are closed as failed, so no conversation stays stuck busy.
 */
export const makeBackendLocal = (options?: { readonly budgets?: Budgets }) =>
  Effect.gen(function*() {
    const store = yield* Store
    const provider = yield* Provider
    for (const run of (yield* store.runningRuns).filter((r) => !ownerAlive(r.owner))) {
      yield* closeDeadRun(store, run).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning(`could not close dead run ${run.id}`, cause))
      )
    }
    const actors = yield* makeActors({ store, provider, budgets: options?.budgets ?? turnBudgets, owner: currentOwner() })
    return Backend.of({
      createConversation: (settings, opts) => store.createConversation(settings, opts),
      getConversation: (id) => store.getConversation(id),
      listConversations: (opts) => store.listConversations(opts),
      updateConversation: (id, patch) => store.updateConversation(id, patch),
      send: actors.send,
      streamRun: (runId, opts) =>
        Stream.unwrap(Effect.as(store.getRun(runId), actors.follow(runId, opts?.after ?? 0))),
      cancel: actors.cancel,
      pendingApprovals: (id) => store.pendingApprovals(id),
      history: (id, cursor) => store.listItems(id, cursor),
      backfill: (id) => store.backfill(id),
      skipReconnectWait: actors.skipReconnectWait,
      compact: actors.compact,
      compactability: (id) =>
        Effect.gen(function*() {
          const conversation = yield* store.getConversation(id)
          const busy = Option.isSome(yield* actors.jobs.get(id)) || Option.isSome(yield* store.activeRun(id))
          return yield* compactability(store, conversation, busy)
        }),
      generateTitle: (id) => generateTitle(store, provider, id),
      exportTrace: (id, segment) => store.exportSegment(id, segment)
    })
  })

export const layerLocal = (options?: { readonly budgets?: Budgets }) => Layer.scoped(Backend, makeBackendLocal(options))
