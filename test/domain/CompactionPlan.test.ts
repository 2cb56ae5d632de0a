import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import {
  compactionTrigger,
  imageTokensOf,
  DEFAULT_IMAGE_TOKENS,
  estimateContext,
  estimateTokens,
  planCompaction,
  planSlidingWindow,
  preflightThreshold,
  type SegmentEntry,
  splitContext
} from "../../src/domain/Compaction.js"
import type { TaskEvent } from "../../src/domain/Events.js"
import { Otid, RunId, ToolCallId } from "../../src/domain/Ids.js"
import { type CompactionSettings, defaultCompactionSettings } from "../../src/domain/Settings.js"

const otid = Otid.make("o")
const user = (content: string): TaskEvent => ({ type: "user_message", content, otid })
const assistant = (content: string): TaskEvent => ({ type: "assistant_message", content })
const call = (id: string): TaskEvent => ({ type: "tool_call", tool_call_id: ToolCallId.make(id), name: "Read", arguments: "{}" })
const result = (id: string): TaskEvent => ({ type: "tool_return", tool_call_id: ToolCallId.make(id), status: "success", content: "x", otid })
const usage = (total: number): TaskEvent => ({ type: "token_usage", input_tokens: total, output_tokens: 0, cached_input_tokens: 0, total_tokens: total })
const ctx = (item: TaskEvent): SegmentEntry => ({ item, inContext: item.type !== "token_usage" })
const text = (tokens: number) => "x".repeat(tokens * 4)
const alternating = (n: number, tokens: number) =>
  Array.from({ length: n }, (_, i) => (i % 2 === 0 ? user(text(tokens)) : assistant(text(tokens))))

describe("estimate", () => {
  it("counts ⌈chars/4⌉", () => {
    assert.strictEqual(estimateTokens(""), 0)
    assert.strictEqual(estimateTokens("abcd"), 1)
    assert.strictEqual(estimateTokens("abcde"), 2)
  })

  it("anchors on the last usage and estimates only what came after it", () => {
    const segment = [user(text(1000)), assistant("a"), usage(407_000), user("keep going")].map(ctx)
    assert.deepStrictEqual(estimateContext(segment), { tokens: 407_003, usageTokens: 407_000, trailingTokens: 3 })
  })

  it("without usage in the segment (just compacted) estimates everything, ignoring stale usage elsewhere", () => {
    const segment = [user(text(200))].map(ctx)
    assert.deepStrictEqual(estimateContext(segment), { tokens: 200, usageTokens: 0, trailingTokens: 200 })
  })

  it("uses the latest of several usages", () => {
    const segment = [user("a"), usage(407_000), assistant("b"), usage(90_000), user("next")].map(ctx)
    assert.strictEqual(estimateContext(segment).tokens, 90_001)
  })

  it("an image counts DEFAULT_IMAGE_TOKENS (about 1,200), or what the caller says its model charges", () => {
    const image = { media_type: "image/png" as const, data: "iVBORw0KGgo=" }
    const screenshot: TaskEvent = { type: "user_message", content: "see", otid, images: [image, image] }
    const shown: TaskEvent = { type: "tool_return", tool_call_id: ToolCallId.make("r1"), status: "success", content: "", otid, images: [image] }
    assert.strictEqual(DEFAULT_IMAGE_TOKENS, 1_200)
    assert.strictEqual(estimateContext([screenshot, shown].map(ctx)).tokens, 1 + 3 * 1_200)
    assert.strictEqual(estimateContext([screenshot, shown].map(ctx), "", 1_600).tokens, 1 + 3 * 1_600)
  })

  it("trace-only items after the anchor do not count", () => {
    const segment: Array<SegmentEntry> = [ctx(usage(100)), { item: assistant(text(50)), inContext: false }, ctx(user(text(10)))]
    assert.strictEqual(estimateContext(segment).tokens, 110)
  })
})

describe("preflightThreshold", () => {
  it("window − min(16384, 20%)", () => {
    assert.strictEqual(preflightThreshold(100_000), 83_616)
    assert.strictEqual(preflightThreshold(10_000), 8_000)
    assert.strictEqual(preflightThreshold(1_000), 800)
    assert.strictEqual(preflightThreshold(0), undefined)
    assert.strictEqual(preflightThreshold(Number.NaN), undefined)
  })
})

describe("planSlidingWindow", () => {
  it("needs at least 4 messages", () => {
    assert.isTrue(Option.isNone(planSlidingWindow([user("a"), assistant("b"), user("c")])))
  })

  it("10 alternating messages without a window: evicts 30%", () => {
    assert.deepStrictEqual(planSlidingWindow(alternating(10, 10)), Option.some({ cut: 3, evictedPercent: 30 }))
  })

  it("10 alternating with window 100: steps until the kept part is under 70", () => {
    assert.deepStrictEqual(planSlidingWindow(alternating(10, 10), 100), Option.some({ cut: 5, evictedPercent: 50 }))
  })

  it("20 alternating of 100 tokens, window 1000: keeps 5", () => {
    assert.deepStrictEqual(planSlidingWindow(alternating(20, 100), 1000), Option.some({ cut: 15, evictedPercent: 80 }))
  })

  it("no assistant message to cut at → None", () => {
    assert.isTrue(Option.isNone(planSlidingWindow(Array.from({ length: 6 }, () => user("u")))))
  })

  it("never splits a tool call from its result", () => {
    const messages = [
      user("u0"), assistant("a1"), call("c1"), result("c1"), call("c2"), result("c2"),
      user("u6"), assistant("a7"), call("c3"), result("c3"), assistant("a10"), user("u11")
    ]
    for (let window = 10; window <= 200; window += 10) {
      const plan = planSlidingWindow(messages, window)
      if (Option.isNone(plan)) continue
      const evicted = messages.slice(0, plan.value.cut)
      const kept = messages.slice(plan.value.cut)
      const ids = (list: ReadonlyArray<TaskEvent>, type: string) =>
        list.flatMap((m) => (m.type === type && "tool_call_id" in m ? [m.tool_call_id] : []))
      assert.deepStrictEqual(ids(evicted, "tool_call"), ids(evicted, "tool_return"), `window ${window}`)
      assert.deepStrictEqual(ids(kept, "tool_call"), ids(kept, "tool_return"), `window ${window}`)
      assert.include(["assistant_message", "tool_call", "reasoning_message"], kept[0]!.type)
    }
    // A cut between c1 and its result would be at index 3; it is never chosen.
    assert.notStrictEqual(Option.getOrUndefined(planSlidingWindow(messages))?.cut, 3)
  })

  it("evicts at least 30%", () => {
    const plan = planSlidingWindow(alternating(20, 1))
    assert.isTrue(Option.isSome(plan) && plan.value.cut >= 6)
  })
})

describe("compactionTrigger", () => {
  const begin = (attempt: number, purpose?: "compaction"): TaskEvent => ({ type: "request_begin", attempt, ...(purpose !== undefined ? { purpose } : {}) })
  const settings = (compaction: Partial<CompactionSettings>) => ({
    compaction: { ...defaultCompactionSettings, ...compaction },
    system_prompt: "",
    tools: []
  })

  it("context: the last usage of the segment reached maxContextLength (≤0 disables it)", () => {
    const segment = [user("a"), usage(100), user("b"), usage(60)].map(ctx)
    assert.deepStrictEqual(compactionTrigger(segment, settings({ maxContextLength: 100 })), Option.none())
    assert.deepStrictEqual(compactionTrigger(segment.slice(0, 2), settings({ maxContextLength: 100 })), Option.some("context"))
    assert.deepStrictEqual(compactionTrigger(segment.slice(0, 2), settings({ maxContextLength: 0 })), Option.none())
  })

  it("turns: first requests of runs only, never reconnects or compaction requests", () => {
    const segment = [begin(0), begin(1), begin(0, "compaction"), begin(0)].map(ctx)
    assert.deepStrictEqual(compactionTrigger(segment, settings({ maxSessionTurns: 2 })), Option.some("turns"))
    assert.deepStrictEqual(compactionTrigger(segment, settings({ maxSessionTurns: 3 })), Option.none())
    assert.deepStrictEqual(compactionTrigger(segment, settings({ maxSessionTurns: -1 })), Option.none())
  })

  it("pre-flight: the estimate is over window − reserve; the system prompt and tools count without a usage", () => {
    const segment = [usage(700), user(text(100))].map(ctx)
    assert.deepStrictEqual(compactionTrigger(segment, settings({ maxContextLength: 0, contextWindow: 1000 })), Option.none())
    assert.deepStrictEqual(compactionTrigger([...segment, ctx(user("x"))], settings({ maxContextLength: 0, contextWindow: 1000 })), Option.some("preflight"))
    const fresh = [user(text(790))].map(ctx)
    assert.deepStrictEqual(compactionTrigger(fresh, settings({ maxContextLength: 0, contextWindow: 1000 })), Option.none())
    assert.deepStrictEqual(
      compactionTrigger(fresh, { ...settings({ maxContextLength: 0, contextWindow: 1000 }), system_prompt: text(20) }),
      Option.some("preflight")
    )
  })

  it("pre-flight counts images: a few screenshots fill a small window though their text is short", () => {
    const image = { media_type: "image/png" as const, data: "iVBORw0KGgo=" }
    const screenshots = [usage(1_000), user("look"), { type: "user_message" as const, content: "and these", otid, images: [image, image, image] }].map(ctx)
    const window = { maxContextLength: 0, contextWindow: 8_000 }
    // 1,000 + 1 + 3 + 3 · 1,200 = 4,604: under the 6,400 threshold; with the model's 2,000 per image, 7,004 is over.
    assert.deepStrictEqual(compactionTrigger(screenshots, settings(window)), Option.none())
    assert.deepStrictEqual(compactionTrigger(screenshots, settings({ ...window, imageTokens: 2_000 })), Option.some("preflight"))
    assert.deepStrictEqual(compactionTrigger([...screenshots, ...screenshots.slice(2)], settings(window)), Option.some("preflight"))
  })

  it("each provider's own estimate per image, unless the conversation's compaction.imageTokens says otherwise", () => {
    assert.deepStrictEqual([imageTokensOf("anthropic"), imageTokensOf("openai"), imageTokensOf("baton.replay"), imageTokensOf(undefined)], [1_600, 765, 1_200, 1_200])
    const image = { media_type: "image/png" as const, data: "iVBORw0KGgo=" }
    const screenshots = [usage(1_000), { type: "user_message" as const, content: "these", otid, images: [image, image, image, image] }].map(ctx)
    const window = { maxContextLength: 0, contextWindow: 8_000 }
    // 1,000 + 2 + 4 · 1,600 = 7,402 is over the 6,400 threshold; 4 · 765 or 4 · 1,200 is not.
    assert.deepStrictEqual(compactionTrigger(screenshots, settings(window), imageTokensOf("anthropic")), Option.some("preflight"))
    assert.deepStrictEqual(compactionTrigger(screenshots, settings(window), imageTokensOf("openai")), Option.none())
    assert.deepStrictEqual(compactionTrigger(screenshots, settings({ ...window, imageTokens: 100 }), imageTokensOf("anthropic")), Option.none())
  })
})

describe("planCompaction", () => {
  const runId = RunId.make("run-1")
  const own = (item: TaskEvent): { readonly item: TaskEvent } => ({ item: { ...item, run_id: runId } })
  const other = (item: TaskEvent): { readonly item: TaskEvent } => ({ item })
  const summarize = { ...defaultCompactionSettings, mode: "summarize" as const }

  it("the run's own input follows the summary, and so does the assistant turn whose calls it answers", () => {
    const context = [other(user("u1")), other(assistant("a1")), other(user("u2")), other(assistant("a2")), other(call("c1")), own(result("c1"))]
    const split = splitContext(context, runId)
    assert.deepStrictEqual([split.older.length, split.keep.length, split.tail.length], [3, 2, 1])
    assert.deepStrictEqual(planCompaction(context, runId, summarize), Option.some({ summarize: context.slice(0, 3), keep: context.slice(3) }))
  })

  it("results committed as their tools finished sit before the input: the turn stays whole with all of them", () => {
    // c2's result was committed when its tool finished; c1's came with the run's input.
    const context = [other(user("u1")), other(assistant("a1")), other(call("c1")), other(call("c2")), other(result("c2")), own(result("c1")), own(user("go on"))]
    const split = splitContext(context, runId)
    assert.deepStrictEqual([split.older.length, split.keep.length, split.tail.length], [1, 4, 2])
    // Every result before the input: the turn is complete and may be summarized with the rest.
    const answered = [other(user("u1")), other(call("c1")), other(result("c1")), own(user("go on"))]
    assert.deepStrictEqual(splitContext(answered, runId).older.length, 3)
  })

  it("nothing older than the run's own turn: nothing to compact", () => {
    assert.isTrue(Option.isNone(planCompaction([own(user("u"))], runId, summarize)))
    assert.isTrue(Option.isNone(planCompaction([other(assistant("a")), other(call("c1")), own(result("c1"))], runId, summarize)))
  })

  it("sliding_window summarizes only the evicted part and keeps the rest verbatim", () => {
    const context = alternating(10, 10).map(other)
    assert.deepStrictEqual(
      planCompaction(context, runId, { ...summarize, mode: "sliding_window" }),
      Option.some({ summarize: context.slice(0, 3), keep: context.slice(3) })
    )
  })

  it("sliding_window whose result still does not fit the window falls back to summarizing everything older (Letta seed §9.6)", () => {
    const older = alternating(10, 10).map(other)
    // The run's own input alone is near the window: keeping 70% of the older context on top cannot fit.
    const context = [...older, own(user("x".repeat(4 * 760)))]
    const settings = { ...summarize, mode: "sliding_window" as const, contextWindow: 1000 }
    assert.deepStrictEqual(planCompaction(context, runId, settings), Option.some({ summarize: older, keep: context.slice(older.length) }))
    // With room for it, the window is kept.
    const roomy = { ...settings, contextWindow: 100_000 }
    assert.deepStrictEqual(planCompaction(context, runId, roomy), Option.some({ summarize: older.slice(0, 3), keep: context.slice(3) }))
  })
})
