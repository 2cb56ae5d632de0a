import type { StoredItem } from "./History.js"
import type { ConversationId } from "./Ids.js"
import type { RunKind } from "./Run.js"

/**
 * Whether a conversation has a task running, told from what the backend stores, so every client
 * (another terminal, the web page, a remote client) gets the same answer. A task is a run, or
 * several runs chained by tool results or steering; between two of its runs no run is active, so
 * the stored state has to say that the task goes on:
 * - a turn run is active (a compaction run alone is no task: `/compact` runs outside one);
 * - calls of the context wait for results (a run stopped `requires_approval`);
 * - steering is held (a run ended while it waited: the task continues with it);
 * - the newest context items are tool results (all answered, the client's next run not sent yet),
 *   unless an `abort` was recorded with them: an interrupted task closes its calls the same way.
 * A task whose client died between two runs still looks running here; steering then waits for the
 * next run, as it did before there was a rule.
 */
export interface TaskFacts {
  /** The kind of the conversation's active run, if it has one. */
  readonly activeRun: RunKind | undefined
  /** Calls of the current context without a result. */
  readonly pendingCalls: number
  /** Steering no request has taken yet. */
  readonly heldSteering: number
  /** The newest recorded items, in chronological order (TASK_TAIL_ITEMS are enough). */
  readonly tail: ReadonlyArray<Pick<StoredItem, "inContext" | "item">>
}

/** How many of the newest items `awaitingNextRun` needs: a batch's results, its decisions and an abort. */
export const TASK_TAIL_ITEMS = 100

/** The newest context items are tool results with no abort among them: the task's next run is due. */
export const awaitingNextRun = (tail: TaskFacts["tail"]): boolean => {
  let results = 0
  for (let i = tail.length - 1; i >= 0; i--) {
    const { inContext, item } = tail[i]!
    if (item.type === "abort") return false
    if (!inContext) continue
    if (item.type !== "tool_return") break
    results++
  }
  return results > 0
}

export const taskRunning = (facts: TaskFacts): boolean =>
  facts.activeRun === "turn" || facts.pendingCalls > 0 || facts.heldSteering > 0 || awaitingNextRun(facts.tail)

/** Why an idle conversation refuses steering, and what to do instead. */
export const noTaskMessage = (id: ConversationId): string =>
  `no task is running in conversation ${id}, so there is nothing to steer; send the text as a prompt instead`
