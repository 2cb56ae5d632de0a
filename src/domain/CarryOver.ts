import type { ApprovalDecision } from "./Events.js"
import type { NewItem } from "./History.js"
import { Otid, type ToolCallId } from "./Ids.js"
import { INTERRUPTED_TEXT, type ToolCall, type ToolReturn } from "./Messages.js"

/**
 * What an interrupted (or abandoned) task leaves for the next one, stored as model context so it
 * survives the process. `results` close the pending calls (finished ones real, unfinished ones
 * `interrupted` placeholders, which stay out of the trace); `turnAborted` is the flattened partial
 * turn (`[turn_aborted]…[/turn_aborted]`) when the model's output was incomplete.
 */
export interface CarryOver {
  readonly results?: ReadonlyArray<ToolReturn>
  readonly turnAborted?: string
  readonly events?: ReadonlyArray<ApprovalDecision>
  /** Record an `abort` event in the trace. */
  readonly abort?: boolean
}

/**
 * The items that record an interrupted task: the abort and the client's decisions for the trace;
 * every pending call closed exactly once (finished results as real results, the rest as
 * context-only `[interrupted…]` placeholders); and the flattened partial turn as context-only text.
 * A held result (committed as its tool finished) wins over the carry-over's. Results for calls that
 * are not pending are dropped: they are committed already, or a result without its call, which
 * every provider would reject.
 */
export const closeCalls = (
  pending: ReadonlyArray<ToolCall>,
  carryOver: CarryOver | undefined,
  held: ReadonlyMap<ToolCallId, ToolReturn> = new Map()
): ReadonlyArray<NewItem> => {
  const results = carryOver?.results ?? []
  const items: Array<NewItem> = []
  if (carryOver?.abort === true) items.push({ item: { type: "abort", reason: "interrupted by the user" } })
  for (const event of carryOver?.events ?? []) items.push({ item: event })
  for (const call of pending) {
    const kept = held.get(call.tool_call_id)
    const result = results.find((r) => r.tool_call_id === call.tool_call_id)
    if (kept !== undefined) {
      // Committed as it finished (held in the trace): the context gets its copy.
      items.push({ item: kept, contextOnly: true })
    } else if (result !== undefined && result.status !== "interrupted") {
      items.push({ item: result })
    } else {
      items.push({
        item: result ?? {
          type: "tool_return",
          tool_call_id: call.tool_call_id,
          status: "interrupted",
          content: INTERRUPTED_TEXT,
          otid: Otid.make(`interrupted-${call.tool_call_id}`)
        },
        contextOnly: true
      })
    }
  }
  if (carryOver?.turnAborted !== undefined && carryOver.turnAborted.length > 0) {
    items.push({
      item: { type: "user_message", content: carryOver.turnAborted, otid: Otid.make(`turn-aborted-${pending.length}-${results.length}`) },
      contextOnly: true
    })
  }
  return items
}
