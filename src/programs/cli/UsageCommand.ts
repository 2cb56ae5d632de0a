import * as Effect from "effect/Effect"
import type { ConversationId } from "../../domain/Ids.js"
import type { Pricing, UsageReport, UsageTotals } from "../../domain/Usage.js"
import { Backend } from "../../services/Backend.js"
import type { Io } from "./Io.js"
import { colorFor, makeStyle } from "./view/Style.js"

/**
 * `baton usage`: token usage per conversation and model, and in total, from every model request
 * recorded (turns, compactions, titles, failed attempts), with cost when the settings price the model.
 */

export interface UsageOptions {
  readonly json: boolean
  readonly conversationId?: ConversationId
  readonly since?: number
  readonly pricing?: Pricing
}

const n = (value: number) => value.toLocaleString("en-US")
const usd = (totals: UsageTotals) => (totals.cost_usd !== undefined ? `$${totals.cost_usd.toFixed(4)}` : "—")

const columns = (totals: UsageTotals) => [n(totals.requests), n(totals.input_tokens), n(totals.output_tokens), n(totals.cache_read_tokens), n(totals.cache_write_tokens), usd(totals)]

/** A table with right-aligned numbers, one line per conversation and model, then the total. */
export const renderUsage = (report: UsageReport): ReadonlyArray<string> => {
  const head = ["conversation", "model", "requests", "input", "output", "cache read", "cache write", "cost"]
  const rows = report.conversations.map((c) => [c.title !== undefined ? `${c.id} (${c.title.slice(0, 30)})` : c.id, c.model, ...columns(c)])
  const all = [head, ...rows, ["total", "", ...columns(report.total)]]
  const widths = head.map((_, i) => Math.max(...all.map((row) => row[i]!.length)))
  return all.map((row) => row.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ").trimEnd())
}

export const showUsage = Effect.fn("Cli.usage")(function*(io: Io, options: UsageOptions) {
  const backend = yield* Backend
  // An unknown id is a mistake to report (NotFound, exit 2), not a conversation with no usage.
  if (options.conversationId !== undefined) yield* backend.getConversation(options.conversationId)
  const report = yield* backend.usage({
    ...(options.conversationId !== undefined ? { conversationId: options.conversationId } : {}),
    ...(options.since !== undefined ? { since: options.since } : {}),
    ...(options.pricing !== undefined ? { pricing: options.pricing } : {})
  })
  if (options.json) return io.out(`${JSON.stringify(report)}\n`)
  const style = makeStyle(colorFor({ isTTY: io.stdoutTTY }, io.env))
  if (report.total.requests === 0) return io.out("no model requests recorded yet\n")
  const lines = renderUsage(report)
  io.out(`${[style.bold(lines[0]!), ...lines.slice(1, -1), style.bold(lines.at(-1)!)].join("\n")}\n`)
  if (options.pricing === undefined) io.out(style.dim("(no cost: add a \"pricing\" table to settings.json)\n"))
})
