import { Schema } from "effect"

/**
 * Usage accounting, every `token_usage` kept as the raw data for cost statistics: one record per
 * model request that reported usage, whatever it was for (a turn, a compaction, a title), failed
 * attempts included. `baton usage` and `GET /v1/usage` aggregate them,
 * with cost from the settings' `pricing` table.
 */

export const UsagePurpose = Schema.Literal("turn", "compaction", "title")
export type UsagePurpose = typeof UsagePurpose.Type

export interface UsageRecord {
  readonly conversation_id: string
  readonly run_id?: string
  readonly purpose: UsagePurpose
  readonly model: string
  /** The whole prompt, cached parts included (as the token_usage event reports it). */
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cache_read_tokens: number
  readonly cache_write_tokens: number
  /** Milliseconds since the epoch. */
  readonly created_at: number
}

/** USD per million tokens, by model (settings `pricing`). */
export const ModelPrice = Schema.Struct({
  input: Schema.NonNegative,
  output: Schema.NonNegative,
  cacheRead: Schema.optionalWith(Schema.NonNegative, { exact: true }),
  cacheWrite: Schema.optionalWith(Schema.NonNegative, { exact: true })
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type ModelPrice = typeof ModelPrice.Type

export const Pricing = Schema.Record({ key: Schema.String, value: ModelPrice })
export type Pricing = typeof Pricing.Type

const totalsFields = {
  requests: Schema.NonNegativeInt,
  input_tokens: Schema.NonNegativeInt,
  output_tokens: Schema.NonNegativeInt,
  cache_read_tokens: Schema.NonNegativeInt,
  cache_write_tokens: Schema.NonNegativeInt,
  /** Present when every model counted has a price. */
  cost_usd: Schema.optionalWith(Schema.NonNegative, { exact: true })
}

export const UsageTotals = Schema.Struct(totalsFields)
export type UsageTotals = typeof UsageTotals.Type

export const ConversationUsage = Schema.Struct({
  id: Schema.String,
  title: Schema.optionalWith(Schema.String, { exact: true }),
  model: Schema.String,
  ...totalsFields
})
export type ConversationUsage = typeof ConversationUsage.Type

/** What `baton usage --json` prints and `GET /v1/usage` serves. */
export const UsageReport = Schema.Struct({ total: UsageTotals, conversations: Schema.Array(ConversationUsage) })
export type UsageReport = typeof UsageReport.Type

/** `--since YYYY-MM-DD`: that day's start (UTC) in ms, or undefined when it is not such a date. */
export const parseSinceDate = (text: string): number | undefined => {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text.trim())
  if (match === null) return undefined
  const ms = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))
  return new Date(ms).toISOString().slice(0, 10) === text.trim() ? ms : undefined
}

/**
 * A request's cost: cached tokens at their own price (the input price when none is given), the rest
 * of the prompt at the input price. undefined when the model has no price.
 */
export const costOf = (record: UsageRecord, pricing: Pricing | undefined): number | undefined => {
  const price = pricing?.[record.model]
  if (price === undefined) return undefined
  const uncached = Math.max(0, record.input_tokens - record.cache_read_tokens - record.cache_write_tokens)
  return (
    uncached * price.input +
    record.cache_read_tokens * (price.cacheRead ?? price.input) +
    record.cache_write_tokens * (price.cacheWrite ?? price.input) +
    record.output_tokens * price.output
  ) / 1_000_000

}

interface Sum {
  requests: number
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cost: number
  priced: boolean
}

const zero = (): Sum => ({ requests: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, cost: 0, priced: true })

const add = (sum: Sum, record: UsageRecord, pricing: Pricing | undefined) => {
  sum.requests++
  sum.input_tokens += record.input_tokens
  sum.output_tokens += record.output_tokens
  sum.cache_read_tokens += record.cache_read_tokens
  sum.cache_write_tokens += record.cache_write_tokens
  const cost = costOf(record, pricing)
  if (cost === undefined) sum.priced = false
  else sum.cost += cost
}

const totals = (sum: Sum, pricing: Pricing | undefined): UsageTotals => ({
  requests: sum.requests,
  input_tokens: sum.input_tokens,
  output_tokens: sum.output_tokens,
  cache_read_tokens: sum.cache_read_tokens,
  cache_write_tokens: sum.cache_write_tokens,
  ...(pricing !== undefined && sum.priced && sum.requests > 0 ? { cost_usd: Math.round(sum.cost * 1e6) / 1e6 } : {})
})

/**
 * Totals overall and per conversation and model (one row per pair, in the order first seen), with
 * the titles the caller knows.
 */
export const usageReport = (
  records: ReadonlyArray<UsageRecord>,
  options: { readonly pricing?: Pricing | undefined; readonly titles?: ReadonlyMap<string, string> } = {}
): UsageReport => {
  const all = zero()
  const rows = new Map<string, { readonly id: string; readonly model: string; readonly sum: Sum }>()
  for (const record of records) {
    add(all, record, options.pricing)
    const key = `${record.conversation_id}\u0000${record.model}`
    let row = rows.get(key)
    if (row === undefined) {
      row = { id: record.conversation_id, model: record.model, sum: zero() }
      rows.set(key, row)
    }
    add(row.sum, record, options.pricing)
  }
  return {
    total: totals(all, options.pricing),
    conversations: [...rows.values()].map((row) => {
      const title = options.titles?.get(row.id)
      return { id: row.id, ...(title !== undefined ? { title } : {}), model: row.model, ...totals(row.sum, options.pricing) }
    })
  }
}
