import { Option } from "effect"
import type { TaskEvent } from "./Events.js"

/**
 * Compaction planning, pure: how full the context is, when to compact, and where a sliding window
 * may cut. Token counts are estimates (⌈chars / 4⌉) anchored on the provider's last real usage.
 */
/** Whether a compaction can run now (`compactability()`). */
export type Compactability = "ok" | "unsupported" | "empty" | "just_compacted"

export const estimateTokens = (text: string): number => Math.ceil(text.length / 4)

/** The text a context item contributes to a request. */
export const itemText = (item: TaskEvent): string => {
  switch (item.type) {
    case "user_message":
    case "assistant_message":
    case "reasoning_message":
    case "summary_message":
    case "tool_return":
      return item.content
    case "tool_call":
      return item.name + item.arguments
    default:
      return ""
  }
}

export interface SegmentEntry {
  readonly item: TaskEvent
  readonly inContext: boolean
}

export interface Estimate {
  readonly tokens: number
  /** The last real usage total it is anchored on (0 when there is none in this segment). */
  readonly usageTokens: number
  /** The estimate for what came after that usage (or for everything, without one). */
  readonly trailingTokens: number
}

/**
 * Tokens the next request will carry: the last token_usage of the current segment plus an estimate
 * of the context items after it. Usage from before the latest compaction is never seen here (it
 * belongs to an older segment), so a freshly compacted context is not mistaken for a full one.
 */
export const estimateContext = (segment: ReadonlyArray<SegmentEntry>, fixedText = ""): Estimate => {
  let anchor = -1
  for (let i = segment.length - 1; i >= 0; i--) {
    if (segment[i]!.item.type === "token_usage") {
      anchor = i
      break
    }
  }
  const usage = anchor >= 0 ? segment[anchor]!.item : undefined
  const usageTokens = usage?.type === "token_usage" ? usage.total_tokens : 0
  const trailing = segment
    .slice(anchor + 1)
    .filter((e) => e.inContext)
    .reduce((sum, e) => sum + estimateTokens(itemText(e.item)), anchor >= 0 ? 0 : estimateTokens(fixedText))
  return { tokens: usageTokens + trailing, usageTokens, trailingTokens: trailing }
}

/** The pre-flight threshold: window − min(16384, ⌊0.2 · window⌋); undefined for a window that is not positive. */
export const preflightThreshold = (window: number): number | undefined =>
  Number.isFinite(window) && window > 0 ? window - Math.min(16_384, Math.max(1, Math.floor(window * 0.2))) : undefined

const assistantSide: ReadonlySet<string> = new Set(["assistant_message", "reasoning_message", "tool_call"])

export interface SlidingWindowPlan {
  /** Messages [0, cut) are summarized; [cut, n) are kept verbatim. */
  readonly cut: number
  readonly evictedPercent: number
}

/**
 * Where to cut the oldest ≥30% of the context, in integer steps of 10%: only at the start of an
 * assistant turn (after a user message or a tool result), so every tool call keeps its result on
 * the same side. With a window, the kept part must fit under 70% of it. None when no cut works.
 */
export const planSlidingWindow = (
  messages: ReadonlyArray<TaskEvent>,
  window?: number
): Option.Option<SlidingWindowPlan> => {
  const n = messages.length
  if (n < 4) return Option.none()
  const last = messages[n - 1]!
  const maxCut = last.type === "tool_call" ? n - 2 : n - 1
  const tokens = messages.map((m) => estimateTokens(itemText(m)))
  const keptTokens = (cut: number) => tokens.slice(cut).reduce((a, b) => a + b, 0)
  const valid = (i: number) => assistantSide.has(messages[i]!.type) && !assistantSide.has(messages[i - 1]!.type)
  const minCut = Math.max(1, Math.ceil((30 * n) / 100))
  for (let percent = 30; percent <= 90; percent += 10) {
    const limit = Math.min(Math.round((percent * n) / 100), maxCut)
    let cut = -1
    for (let i = limit; i >= minCut; i--) {
      if (valid(i)) {
        cut = i
        break
      }
    }
    if (cut < 0) continue
    if (window === undefined || keptTokens(cut) < window * 0.7) return Option.some({ cut, evictedPercent: percent })
  }
  return Option.none()
}
