import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { matrixCovering, summarize } from "./Soak.js"

/**
 * The kill -9 matrix, short: `baton run` SIGKILLed at each kill point in turn (while streaming,
 * waiting for approval, a tool running, between the last result and the next send, during a
 * compaction, at a random instant), then `baton run --continue --approve allow`. The full 100
 * iterations are `npm run soak`; figures in bench/RELIABILITY.md.
 */
describe("kill -9 matrix (baton run)", () => {
  it.live("10 kills: every tool call paired once, no committed tool run twice, nothing acknowledged lost, nothing busy or running", () =>
    Effect.gen(function*() {
      const required = ["streaming", "approval", "tool_running", "compaction"] as const
      const results = yield* matrixCovering("local", 10, { eventDelayMs: 10, bashMs: 200 }, required)
      const summary = summarize(results)
      assert.deepStrictEqual(summary.violations, [])
      for (const hit of required) {
        assert.isAbove(summary.byHit[hit] ?? 0, 0, `a kill while ${hit}: ${JSON.stringify(summary.byHit)}`)
      }
    }), 120_000)
})
