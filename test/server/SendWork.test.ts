import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Metric, RuntimeFlags, RuntimeFlagsPatch, Supervisor, Tracer } from "effect"
import type * as Fiber from "effect/Fiber"
import * as Path from "node:path"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { BatonServer, serve } from "../../src/programs/server/Server.js"
import { Provider } from "../../src/services/Provider.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { liveProvider, settings } from "../support/ProviderHarness.js"
import { tempDir } from "../support/tempDir.js"

/**
 * What one send costs `baton serve` in Effect work, counted rather than timed: the whole server (HTTP,
 * handlers, actors, runs, SQLite store, HTTP provider) is built under a supervisor with op
 * supervision on, so every fiber it starts and every run-loop step it takes is seen, by the span it
 * runs in; and under a tracer that counts the spans it opens. The client is a plain `fetch` to real
 * HTTP on loopback, the model a loopback server answering each request with one short text.
 */

/** Fibers started and steps taken while counting, the steps by the span they ran in. */
class Work extends Supervisor.AbstractSupervisor<void> {
  counting = false
  fibers = 0
  steps = 0
  readonly bySpan = new Map<string, number>()
  readonly value = Effect.void
  override onStart(): void {
    if (this.counting) this.fibers++
  }
  override onEffect(fiber: Fiber.RuntimeFiber<unknown, unknown>): void {
    if (!this.counting) return
    this.steps++
    const name = fiber.currentSpan?._tag === "Span" ? fiber.currentSpan.name : "(no span)"
    this.bySpan.set(name, (this.bySpan.get(name) ?? 0) + 1)
  }
}

const SENDS = 20

/** Everything the process's metric registry holds under `name`, as one number (counts and sums). */
const metricTotal = (name: string) =>
  Metric.unsafeSnapshot().filter((pair) => pair.metricKey.name === name).reduce((total, pair) => {
    const state = pair.metricState as { readonly count?: number; readonly count_?: number; readonly sum?: number }
    return total + (state.count ?? 0) + (state.sum ?? 0)
  }, 0)

describe("the work of a send through baton serve", () => {
  it.scopedLive("a warm send starts 8 fibers, opens 16 spans, runs under 4,580 Effect steps and records no metric when none is exported", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      // The whole answer in one write, so the provider reads it in one piece and the count is the same each time.
      const model = yield* MockModelServer.make({ respond: () => MockModelServer.Reply.text("ok", {}, { writes: [{ events: 100 }] }) })
      const work = new Work()
      let spans = 0
      const native = yield* Effect.tracer
      const tracer = Tracer.make({
        span: (...args) => {
          if (work.counting) spans++
          return native.span(...args)
        },
        context: native.context
      })
      const provider = Layer.effect(Provider, liveProvider("openai-chat", settings(model.baseUrl("openai-chat"))))
      const context = yield* Layer.build(
        serve({ port: 0, drainTimeoutMs: 1_000 }).pipe(
          Layer.provide(layerLocal()),
          Layer.provide(layerSqlite({ filename: Path.join(dir, "baton.db") })),
          Layer.provide(provider)
        )
      ).pipe(
        Effect.withTracer(tracer),
        Effect.supervised(work),
        Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
      )
      const { url } = Context.get(context, BatonServer)
      const post = (path: string, body: unknown) =>
        Effect.promise(() =>
          fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
            .then((r) => r.text())
        )
      const { id } = JSON.parse(yield* post("/v1/conversations", {})) as { id: string }
      let sent = 0
      const send = Effect.suspend(() => post(`/v1/conversations/${id}/messages`, { messages: [{ type: "user_message", content: "hi", otid: `o-${++sent}` }] }))
        .pipe(Effect.tap((body) => assert.include(body, "end_turn")))
      // Warm: the connection pools, the actor, the compiled schemas, the context cache.
      for (let i = 0; i < 3; i++) yield* send

      const metricsBefore = metricTotal("gen_ai.client.operation.duration") + metricTotal("gen_ai.client.token.usage")
      work.counting = true
      for (let i = 0; i < SENDS; i++) yield* send
      work.counting = false
      const metricsAfter = metricTotal("gen_ai.client.operation.duration") + metricTotal("gen_ai.client.token.usage")

      // SEND_WORK=1 prints the figures, to lower the ceilings below after a cut.
      if (process.env["SEND_WORK"] !== undefined) console.log({ fibers: work.fibers / SENDS, spans: spans / SENDS, steps: work.steps / SENDS })
      const fibers = work.fibers / SENDS
      const steps = work.steps / SENDS
      const where = [...work.bySpan].sort((a, b) => b[1] - a[1]).map(([name, n]) => `${Math.round(n / SENDS)} ${name}`).join("\n")
      // The request's, the run's job, the SSE body's three (its pump, heartbeat and shutdown watch)
      // and the provider request's three. Ten with a tracker fiber per send, parked until the stream
      // ended so shutdown could wait for it (the server counts its open streams instead), and the
      // HTTP server's own fiber running a Stream body (the body is a Node stream now).
      assert.isAtMost(fibers, 8, `${fibers} fibers a send`)
      // 19 with spans of their own for Admission.follow (a look-up every send and stream request
      // makes), Runs.run (around baton.run) and Run.streamRequest (around chat MODEL).
      assert.isAtMost(spans / SENDS, 16, `${spans / SENDS} spans a send`)
      // 5,736 steps with the tracker fiber, the look-up's span, the metrics updated with no exporter
      // and the run's stream a stream of streams (Stream.unwrap: a sub-executor on every pull);
      // 5,443 with the SSE body a Stream (a stream of streams over a queue, ≈ 800 steps a send);
      // 4,598 with the gate a generator providing the body cap to every request (only a chunked body
      // can outgrow it); 4,570 now (the provider ≈ 1,480, the HTTP request and SSE body ≈ 1,420, the
      // store ≈ 750).
      assert.isAtMost(steps, 4_580, `${steps} steps a send:\n${where}`)
      // Only an installed exporter reads the metrics: without one, a send updates none.
      assert.strictEqual(metricsAfter, metricsBefore)
    }), 60_000)
})
