import { assert, describe, it } from "@effect/vitest"
import { Effect, RuntimeFlags, RuntimeFlagsPatch, Supervisor } from "effect"
import * as MockModelServer from "../support/MockModelServer.js"
import { liveProvider, request, run, settings } from "../support/ProviderHarness.js"

/**
 * What one provider request costs in Effect work, counted rather than timed: the fibers it starts and
 * the run-loop steps of every fiber involved, for a one-delta Chat Completions answer over loopback HTTP
 * (the whole body in one write, so the client reads it in one piece and the count is the same each time).
 */

/** Counts the fibers started and the run-loop steps of the fibers it supervises (with op supervision on). */
class Counter extends Supervisor.AbstractSupervisor<number> {
  steps = 0
  fibers = 0
  readonly value = Effect.sync(() => this.steps)
  override onStart(): void {
    this.fibers++
  }
  override onEffect(): void {
    this.steps++
  }
}

const REQUESTS = 20

describe("provider request cost", () => {
  it.scopedLive("an openai-chat request starts few fibers and runs few steps", () =>
    Effect.gen(function*() {
      const server = yield* MockModelServer.make({ respond: () => MockModelServer.Reply.text("hi", {}, { writes: [{ events: 100 }] }) })
      const provider = yield* liveProvider("openai-chat", settings(server.baseUrl("openai-chat")))
      const once = run(provider.stream(request()))
      // Warm-up: the connection pool, compiled schemas.
      for (let i = 0; i < 3; i++) assert.isUndefined((yield* once).error)
      const counter = new Counter()
      for (let i = 0; i < REQUESTS; i++) {
        const outcome = yield* once.pipe(
          Effect.supervised(counter),
          Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
        )
        assert.isUndefined(outcome.error)
        assert.deepStrictEqual(outcome.events.map((e) => e._tag), ["TextDelta", "Usage", "Finish"])
      }
      const fibers = counter.fibers / REQUESTS
      const steps = counter.steps / REQUESTS
      // The consumer's own run (Stream.run forks the channel executor's fiber), the timeouts' reader
      // and watchdog. The reader running the body with Stream.run* made four.
      assert.strictEqual(fibers, 3, `${fibers} fibers a request`)
      // 2,104 steps with the reader running the body with Stream.run, the request sent in a stage of
      // its own before the timeouts' stage, SSE framing and the wire decoder in two stages, and a
      // stage to read a fixed key, and the timeouts' stage a stream of streams (unwrapScoped); 1,324
      // now, with a little room for where the scheduler yields.
      assert.isAtMost(steps, 1_380, `${steps} steps a request`)
    }))
})
