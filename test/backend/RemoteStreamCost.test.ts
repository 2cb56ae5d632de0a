import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import { Effect, RuntimeFlags, RuntimeFlagsPatch, Stream, Supervisor } from "effect"
import type { Chunk } from "../../src/domain/Events.js"
import { RunId } from "../../src/domain/Ids.js"
import { turnBudgets } from "../../src/domain/Recovery.js"
import { END_EVENT, sseEvent } from "../../src/programs/server/Sse.js"
import { makeBackendRemote } from "../../src/services/backend/Remote.js"
import { chunksOf, resumable } from "../../src/services/backend/RemoteRunStream.js"

/**
 * What a remote run stream costs the client per read of the body, counted (Effect steps of the
 * reading fibers), not timed: the body decoded into chunks, and the same with the resuming layer on
 * top (the cursor, the stop, the reconnect policy), which must add little to each read.
 */

class StepCounter extends Supervisor.AbstractSupervisor<number> {
  steps = 0
  readonly value = Effect.sync(() => this.steps)
  override onEffect() {
    this.steps++
  }
}

const runId = RunId.make("run-1")
const bytes = new TextEncoder()

/** A body of `reads` reads of ten events each and then the stop; each read only once the consumer got the one before. */
const paced = (reads: number) => {
  let seq = 0
  let read = 0
  let wake: (() => void) | undefined
  const stream = new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      if (read > 0) await new Promise<void>((resolve) => (wake = resolve))
      if (read === reads) {
        controller.enqueue(bytes.encode(sseEvent({ type: "stop_reason", reason: "end_turn", run_id: runId, seq: ++seq }) + END_EVENT))
        controller.close()
        return
      }
      read++
      let text = ""
      for (let i = 0; i < 10; i++) text += sseEvent({ type: "text_delta", content: `${seq} `, run_id: runId, seq: ++seq })
      controller.enqueue(bytes.encode(text))
    }
  }, { highWaterMark: 0 })
  const web = new Response(stream, { headers: { "content-type": "text/event-stream" } })
  const response = HttpClientResponse.fromWeb(HttpClientRequest.get("http://baton.test/"), web)
  return { response, web, got: () => wake?.() }
}

type Body = ReturnType<typeof paced>

const stepsFor = (reads: number, stream: (body: Body) => Stream.Stream<Chunk, unknown, FetchHttpClient.Fetch>) =>
  Effect.gen(function*() {
    const body = paced(reads)
    const { got } = body
    const counter = new StepCounter()
    let chunks = 0
    yield* Stream.runForEachChunk(stream(body), (batch) =>
      Effect.sync(() => {
        chunks += batch.length
        got()
      })).pipe(
        // A fetch that answers with the body, read from the fiber's context when a request is made.
        Effect.provideService(FetchHttpClient.Fetch, () => Promise.resolve(body.web)),
        Effect.supervised(counter),
        Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
      )
    assert.strictEqual(chunks, reads * 10 + 1)
    return counter.steps
  })

/** Steps per read: a body of 30 reads against one of 10, over 20. */
const perRead = (stream: (body: Body) => Stream.Stream<Chunk, unknown, FetchHttpClient.Fetch>) =>
  Effect.gen(function*() {
    const few = yield* stepsFor(10, stream)
    const many = yield* stepsFor(30, stream)
    return (many - few) / 20
  })

describe("a remote run stream's cost per read", () => {
  it.live("the resuming layer adds a few steps to each read, not a chain of stages", () =>
    Effect.gen(function*() {
      const decoded = yield* perRead(({ response }) => chunksOf(response, 45_000))
      const resumed = yield* perRead(({ response }) => resumable(() => chunksOf(response, 45_000), { budgets: turnBudgets }))
      // 64 and 154 with the cursor, the stop, the error passing and the policy as stream stages
      // (Stream.retry also resets its schedule on every chunk); 64 and 76 as one pull loop.
      assert.isAtMost(resumed - decoded, 25, `decoded: ${decoded} steps a read, resumed: ${resumed}`)
    }))

  it.live("the remote backend's run stream adds nothing per read to it without a tracing backend (no span)", () =>
    Effect.gen(function*() {
      const resumed = yield* perRead(({ response }) => resumable(() => chunksOf(response, 45_000), { budgets: turnBudgets }))
      // The whole client: the HTTP API's request and its answer, from a fetch that answers with the body.
      const backend = yield* makeBackendRemote({ url: "http://baton.test" }).pipe(Effect.provide(FetchHttpClient.layer))
      const remote = yield* perRead(() => backend.streamRun(runId))
      // With the stream's span always on it cost each read ~25 steps more.
      assert.isAtMost(remote - resumed, 8, `resumed: ${resumed} steps a read, through the remote backend: ${remote}`)
    }))
})
