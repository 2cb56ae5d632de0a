import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { matrix, summarize } from "./Soak.js"

/**
 * The kill -9 matrix against `baton serve`, short: the server SIGKILLed under a `--server` client at
 * each kill point in turn, restarted at once on the same SQLite file; the client rides out the
 * restart (its stream and result commits reconnect) or ends and is continued. The full 100
 * iterations are `npm run soak`; figures in bench/RELIABILITY.md.
 */
describe("kill -9 matrix (baton serve)", () => {
  it.live("5 kills: every tool call paired once, no committed tool run twice, nothing acknowledged lost, nothing busy or running", () =>
    Effect.gen(function*() {
      const results = yield* matrix("server", 5, { eventDelayMs: 10, bashMs: 200 })
      const summary = summarize(results)
      assert.deepStrictEqual(summary.violations, [])
      // One kill per kill point; under load one may land in a neighbouring phase, so ask for most of them.
      const hits = Object.keys(summary.byHit).filter((hit) => hit !== "between" && hit !== "finished")
      assert.isAtLeast(hits.length, 3, JSON.stringify(summary.byHit))
    }), 120_000)
})
