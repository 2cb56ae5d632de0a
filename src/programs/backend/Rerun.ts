import { Effect } from "effect"
import { InvalidInput } from "../../domain/Errors.js"
import type { ConversationId } from "../../domain/Ids.js"
import type { Store } from "../../services/Store.js"

/** Items looked back through for the last stop; one not found among them is not retried. */
const LOOK_BACK = 50

/**
 * A send without new messages (`SendInput.retry`) re-runs the conversation on its context as it
 * stands. Only a turn that stopped `auth` or `error` left something to re-run: at any other time an
 * empty send is a caller bug, and re-running would answer the same context twice.
 */
export const checkRerun = Effect.fn("Rerun.check")(function*(store: Store["Type"], id: ConversationId) {
  const recent = yield* store.listItems(id, { limit: LOOK_BACK })
  const stop = recent.findLast((s) => s.item.type === "stop_reason")?.item
  const runId = stop?.type === "stop_reason" ? stop.run_id : undefined
  const run = runId !== undefined ? yield* store.getRun(runId) : undefined
  if (run === undefined || run.kind !== "turn" || (run.stopReason !== "auth" && run.stopReason !== "error")) {
    return yield* new InvalidInput({
      message: "nothing to retry: a send with no messages re-runs only a turn that stopped with `auth` or `error`"
    })
  }
})
