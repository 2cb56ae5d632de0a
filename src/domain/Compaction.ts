import { Option } from "effect"
import type { ConversationSettings } from "./Conversation.js"
import type { CompactionReason, TaskEvent } from "./Events.js"
import type { RunId } from "./Ids.js"
import type { CompactionSettings } from "./Settings.js"

/**
 * Compaction planning, pure: how full the context is, when to compact, what is summarized and what
 * is kept, and where a sliding window may cut. Token counts are estimates (⌈chars / 4⌉, and a fixed
 * cost per image) anchored on the provider's last real usage.
 */
/** Whether a compaction can run now (`compactability()`). */
/** `busy`: a run or a compaction is active now (try again when it ends); `unsupported`: this conversation cannot be compacted. */
export type Compactability = "ok" | "busy" | "unsupported" | "empty" | "just_compacted"

export const estimateTokens = (text: string): number => Math.ceil(text.length / 4)

/**
 * What one image costs a request when nothing better is known: about what a screenshot-sized image
 * costs on the providers (Anthropic ≈ width·height/750, capped near 1,600; OpenAI high detail 765–1,105).
 * A conversation's `compaction.imageTokens` sets its model's own.
 */
export const DEFAULT_IMAGE_TOKENS = 1_200

/**
 * The estimate per image of the API a provider speaks (`gen_ai.provider.name`): Anthropic's
 * width·height/750 at its 1,568-px cap is about 1,600; OpenAI's high detail of a 1,024-px image is 765
 * (85 + 4 tiles · 170). Another or an unknown provider gets DEFAULT_IMAGE_TOKENS.
 */
export const imageTokensOf = (provider: string | undefined): number =>
  provider === "anthropic" ? 1_600 : provider === "openai" ? 765 : DEFAULT_IMAGE_TOKENS

const imagesIn = (item: TaskEvent): number =>
  (item.type === "user_message" || item.type === "tool_return") && item.images !== undefined ? item.images.length : 0

/** The estimate of one context item: its text, plus `imageTokens` for each image it carries. */
export const itemTokens = (item: TaskEvent, imageTokens = DEFAULT_IMAGE_TOKENS): number =>
  estimateTokens(itemText(item)) + imagesIn(item) * imageTokens

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
export const estimateContext = (segment: ReadonlyArray<SegmentEntry>, fixedText = "", imageTokens = DEFAULT_IMAGE_TOKENS): Estimate => {
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
    .reduce((sum, e) => sum + itemTokens(e.item, imageTokens), anchor >= 0 ? 0 : estimateTokens(fixedText))
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
  const tokens = messages.map((m) => itemTokens(m))
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

/**
 * Whether the next request should start with a compaction, and why, from the current segment: the
 * last request's usage reached maxContextLength (`context`), the segment holds maxSessionTurns turns
 * (`turns`), or the estimate of the next request is above the pre-flight threshold (`preflight`).
 */
export const compactionTrigger = (
  segment: ReadonlyArray<SegmentEntry>,
  settings: Pick<ConversationSettings, "compaction" | "system_prompt" | "tools">,
  providerImageTokens = DEFAULT_IMAGE_TOKENS
): Option.Option<CompactionReason> => {
  const compaction = settings.compaction
  const lastUsage = segment.findLast((s) => s.item.type === "token_usage")?.item
  if (compaction.maxContextLength > 0 && lastUsage?.type === "token_usage" && lastUsage.total_tokens >= compaction.maxContextLength) {
    return Option.some("context")
  }
  const turns = segment.filter((s) => s.item.type === "request_begin" && s.item.attempt === 0 && s.item.purpose !== "compaction").length
  if (compaction.maxSessionTurns > 0 && turns >= compaction.maxSessionTurns) return Option.some("turns")
  const threshold = preflightThreshold(compaction.contextWindow ?? compaction.maxContextLength)
  if (threshold !== undefined) {
    const fixed = settings.system_prompt + JSON.stringify(settings.tools)
    if (estimateContext(segment, fixed, compaction.imageTokens ?? providerImageTokens).tokens > threshold) return Option.some("preflight")
  }
  return Option.none()
}

/**
 * Splits the model context for compaction: `tail` is this run's own input (it must follow the summary,
 * not be summarized away); `keep` is a trailing assistant turn whose tool calls are not all answered
 * before that input, with the results that are (results are committed as their tools finish, so a
 * turn's results may sit on both sides of the input; a call must never lose its result); `older` is
 * what may be summarized.
 */
export const splitContext = <S extends { readonly item: TaskEvent }>(context: ReadonlyArray<S>, runId: RunId) => {
  const firstOwn = context.findIndex((s) => s.item.run_id === runId)
  const head = firstOwn < 0 ? context : context.slice(0, firstOwn)
  const tail = firstOwn < 0 ? [] : context.slice(firstOwn)
  let callsEnd = head.length
  while (callsEnd > 0 && head[callsEnd - 1]!.item.type === "tool_return") callsEnd--
  let turnStart = callsEnd
  while (turnStart > 0 && assistantSide.has(head[turnStart - 1]!.item.type)) turnStart--
  const answeredBefore = new Set(head.slice(callsEnd).flatMap((s) => (s.item.type === "tool_return" ? [s.item.tool_call_id] : [])))
  const open = head.slice(turnStart, callsEnd).some((s) => s.item.type === "tool_call" && !answeredBefore.has(s.item.tool_call_id))
  const start = open ? turnStart : head.length
  return { older: head.slice(0, start), keep: head.slice(start), tail }
}

export interface CompactionPlan<S> {
  /** What the summary replaces (nothing is summarized in `discard` mode: it is dropped). */
  readonly summarize: ReadonlyArray<S>
  /** What follows the summary verbatim, in order. */
  readonly keep: ReadonlyArray<S>
}

/**
 * What a compaction of `context` by run `runId` summarizes and what it keeps; none when there is
 * nothing older than the run's own turn. A sliding window keeps the recent part of the older context too.
 */
export const planCompaction = <S extends { readonly item: TaskEvent }>(
  context: ReadonlyArray<S>,
  runId: RunId,
  settings: CompactionSettings
): Option.Option<CompactionPlan<S>> => {
  const { keep, older, tail } = splitContext(context, runId)
  if (older.length === 0) return Option.none()
  const window = settings.contextWindow ?? (settings.maxContextLength > 0 ? settings.maxContextLength : undefined)
  const slid = settings.mode === "sliding_window"
    ? Option.match(planSlidingWindow(older.map((s) => s.item), window), { onNone: () => older.length, onSome: (plan) => plan.cut })
    : older.length
  // The window's result is checked whole (what it keeps, the open turn, the run's input): still above
  // the pre-flight threshold, it would only compact again, so everything older is summarized instead.
  const threshold = window === undefined ? undefined : preflightThreshold(window)
  const kept = [...older.slice(slid), ...keep, ...tail].reduce((sum, s) => sum + itemTokens(s.item), 0)
  const cut = threshold !== undefined && kept > threshold ? older.length : slid
  return Option.some({ summarize: older.slice(0, cut), keep: [...older.slice(cut), ...keep, ...tail] })
}
