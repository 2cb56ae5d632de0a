import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Layer } from "effect"
import * as Http from "node:http"
import * as Path from "node:path"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { BatonServer, serve } from "../../src/programs/server/Server.js"
import { Provider } from "../../src/services/Provider.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { liveProvider, settings } from "../support/ProviderHarness.js"
import { readSse } from "../support/serverHarness.js"
import { tempDir } from "../support/tempDir.js"

/**
 * A client that stops reading a run's SSE body never holds the run up: the body's writer waits for
 * the socket (it never buffers without bound), the run goes on to its end, and once the client reads
 * again it gets every chunk once, in order, and the end event. The answer is ~4 MB, more than the
 * body's buffer and the loopback socket's buffers hold, so the writer really is held up.
 */

const DELTAS = 4_000
const delta = (i: number) => `${String(i).padStart(6, "0")}${"x".repeat(994)}`

describe("a stalled SSE client", () => {
  it.scopedLive("does not hold up the run, and later reads every chunk once, in order", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const model = yield* MockModelServer.make({ respond: () => MockModelServer.Reply.text(Array.from({ length: DELTAS }, (_, i) => delta(i))) })
      const provider = Layer.effect(Provider, liveProvider("openai-chat", settings(model.baseUrl("openai-chat"))))
      const { url } = Context.get(
        yield* Layer.build(serve({ port: 0, drainTimeoutMs: 1_000 }).pipe(
          Layer.provide(layerLocal()),
          Layer.provide(layerSqlite({ filename: Path.join(dir, "baton.db") })),
          Layer.provide(provider)
        )),
        BatonServer
      )
      const created = yield* Effect.promise(() => fetch(`${url}/v1/conversations`, { method: "POST" }).then((r) => r.json() as Promise<{ id: string }>))

      // The send's response, paused after its first piece: the run's id is in it.
      const firstPiece = yield* Deferred.make<{ readonly response: Http.IncomingMessage; readonly text: string }>()
      const request = Http.request(`${url}/v1/conversations/${created.id}/messages`, { method: "POST", headers: { "content-type": "application/json" } }, (response) => {
        response.setEncoding("utf8")
        response.once("data", (text: string) => {
          response.pause()
          Deferred.unsafeDone(firstPiece, Effect.succeed({ response, text }))
        })
      })
      request.end(JSON.stringify({ messages: [{ type: "user_message", content: "hi", otid: "stalled-1" }] }))
      const { response, text } = yield* Deferred.await(firstPiece)
      yield* Effect.addFinalizer(() => Effect.sync(() => response.destroy()))
      const runId = /"run_id":"([^"]+)"/.exec(text)?.[1]
      assert.isDefined(runId)

      // Another client reads the same run to its end while the first one still is not reading.
      const other = yield* readSse(`${url}/v1/runs/${runId}/stream`)
      assert.isTrue(other.ended)
      assert.isAbove(other.events.length, DELTAS)
      assert.include(other.events.at(-1)?.data, "stop_reason")

      // The stalled client reads on: everything, once, in order, then the end.
      const rest = yield* Effect.async<string>((resume) => {
        let body = text
        response.on("data", (piece: string) => void (body += piece))
        response.once("end", () => resume(Effect.succeed(body)))
        response.resume()
      })
      const seqs = [...rest.matchAll(/^id: [^:\n]+:(\d+)$/gm)].map((m) => Number(m[1]))
      assert.deepStrictEqual(seqs, other.events.map((e) => Number(e.id?.split(":")[1])))
      assert.deepStrictEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1))
      assert.include(rest, "event: end")
    }), 120_000)
})
