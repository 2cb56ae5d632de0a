import { Effect, Option } from "effect"
import { NoTaskRunning } from "../../domain/Errors.js"
import type { ConversationId } from "../../domain/Ids.js"
import { noTaskMessage, TASK_TAIL_ITEMS, type TaskFacts, taskRunning } from "../../domain/TaskActivity.js"
import type { Store } from "../../services/Store.js"

/**
 * Admits steering only while the conversation has a task running (domain/TaskActivity), told from
 * the store alone. The reads go cheapest first and stop at the first sign of a task. The check and
 * the queueing are not one transaction: a task that ends in between leaves the steering held for the
 * conversation's next run, as every steer was before this check.
 */
export const refuseIdleSteering = Effect.fn("IdleSteering.refuse")(function*(store: Store["Type"], id: ConversationId) {
  const active = yield* store.activeRun(id)
  const facts: TaskFacts = {
    activeRun: Option.getOrUndefined(Option.map(active, (run) => run.kind)),
    pendingCalls: 0,
    heldSteering: 0,
    tail: []
  }
  if (taskRunning(facts)) return
  const pending = yield* store.pendingApprovals(id)
  const held = pending.length > 0 ? [] : yield* store.heldSteering(id)
  const tail = pending.length > 0 || held.length > 0 ? [] : yield* store.listItems(id, { limit: TASK_TAIL_ITEMS })
  if (taskRunning({ ...facts, pendingCalls: pending.length, heldSteering: held.length, tail })) return
  return yield* new NoTaskRunning({ conversationId: id, message: noTaskMessage(id) })
})
