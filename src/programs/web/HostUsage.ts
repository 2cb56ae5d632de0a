import { Effect } from "effect"
import type { StoredItem } from "../../domain/History.js"
import type { ConversationId } from "../../domain/Ids.js"
import type { Pricing, UsageTotals } from "../../domain/Usage.js"
import type { Backend } from "../../services/Backend.js"

const HISTORY_PAGE = 1000

/** The tokens and requests a page shows: the server's count, never a sum the page keeps across loads. */
export interface PageUsage {
  readonly tokens: number
  readonly requests: number
  /** Present when `pricing` prices every model the conversation used. */
  readonly cost_usd?: number
}

export const pageUsage = (totals: UsageTotals): PageUsage => ({
  tokens: totals.input_tokens + totals.output_tokens,
  requests: totals.requests,
  ...(totals.cost_usd !== undefined ? { cost_usd: totals.cost_usd } : {})
})

const recorded = (items: ReadonlyArray<StoredItem>) =>
  items.reduce((acc, { item }) =>
    item.type === "token_usage" ? { tokens: acc.tokens + item.input_tokens + item.output_tokens, requests: acc.requests + 1 } : acc, {
    tokens: 0,
    requests: 0
  })

/** The token_usage a conversation's history holds after `after` (a position), page by page. */
const recordedAfter = (backend: Backend["Type"], id: ConversationId, after: number) =>
  Effect.iterate({ after, tokens: 0, requests: 0, done: false }, {
    while: (s) => !s.done,
    body: (s) =>
      Effect.map(backend.history(id, { after: s.after, limit: HISTORY_PAGE }), (items) => {
        const more = recorded(items)
        return { after: items.at(-1)?.position ?? s.after, tokens: s.tokens + more.tokens, requests: s.requests + more.requests, done: items.length < HISTORY_PAGE }
      })
  })

/**
 * What a page counts from: the totals `GET /v1/usage` reports for the conversation (titles and
 * compactions included), less what the running task (begun after position `runningAfter`) recorded
 * so far, because the page adds that task's token_usage events once as it replays them. The page
 * keeps no total of its own: it loads this again whenever a task ends.
 */
export const usageBase = Effect.fn("HostUsage.usageBase")(function*(
  backend: Backend["Type"],
  id: ConversationId,
  pricing: Pricing | undefined,
  runningAfter: number | undefined
) {
  const report = yield* backend.usage({ conversationId: id, ...(pricing !== undefined ? { pricing } : {}) })
  const server = pageUsage(report.total)
  if (runningAfter === undefined) return server
  const live = yield* recordedAfter(backend, id, runningAfter)
  return { tokens: Math.max(0, server.tokens - live.tokens), requests: Math.max(0, server.requests - live.requests) } satisfies PageUsage
})
