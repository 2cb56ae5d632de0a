import { Effect } from "effect"
import type { ConversationId } from "../../domain/Ids.js"
import type { UserMessage } from "../../domain/Messages.js"
import type { UsageRecord } from "../../domain/Usage.js"
import { conversationNotFound } from "./Codec.js"

/** The memory store's side tables (see SqlLedger): steering held for the next input assembly, and usage. */
export const makeMemoryLedger = (has: (id: ConversationId) => boolean) => {
  const steering = new Map<string, Array<UserMessage>>()
  const usage: Array<UsageRecord> = []
  const known = (id: ConversationId) => Effect.suspend(() => (has(id) ? Effect.void : Effect.fail(conversationNotFound(id))))
  return {
    queueSteering: (id: ConversationId, message: UserMessage) =>
      Effect.zipRight(known(id), Effect.sync(() => void steering.set(id, [...(steering.get(id) ?? []), message]))),
    heldSteering: (id: ConversationId) => Effect.zipRight(known(id), Effect.sync(() => [...(steering.get(id) ?? [])])),
    /** A commit's `takesSteering`: applied in the commit's own synchronous step. */
    dropSteering: (id: ConversationId, otids: ReadonlyArray<string>) => {
      const left = (steering.get(id) ?? []).filter((m) => !otids.includes(m.otid))
      if (left.length === 0) steering.delete(id)
      else steering.set(id, left)
    },
    takeSteering: (id: ConversationId) =>
      Effect.zipRight(known(id), Effect.sync(() => {
        const taken = steering.get(id) ?? []
        steering.delete(id)
        return taken
      })),
    recordUsage: (record: UsageRecord) => Effect.sync(() => void usage.push(record)),
    /** A commit's `usage`: recorded in the commit's own synchronous step. */
    addUsage: (records: ReadonlyArray<UsageRecord>) => void usage.push(...records),
    usage: (query?: { readonly conversationId?: ConversationId; readonly since?: number }) =>
      Effect.sync(() =>
        usage.filter((r) =>
          (query?.conversationId === undefined || r.conversation_id === query.conversationId) && r.created_at >= (query?.since ?? 0)
        ))
  }
}
