import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Http from "node:http"
import { layerScripted, Turn } from "../../src/services/provider/Scripted.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { fetchJson, localBackend, serveOn } from "../support/serverHarness.js"
import { collect, input, toolResult, user } from "../support/testing.js"
import { assertErrorJson } from "../support/httpErrors.js"

/**
 * The bad-input corpus of `baton serve`: every malformed request gets a clear JSON error with a
 * stable code, nothing is written, and the server keeps serving (a health check after each case).
 */

interface Case {
  readonly name: string
  readonly method: string
  readonly path: string
  readonly body?: string
  readonly headers?: Record<string, string>
  readonly status: number
  readonly code: string
  /** A word the message must contain, so it says what was wrong. */
  readonly mentions?: string
}

const jsonBody = (value: unknown) => ({ body: JSON.stringify(value), headers: { "content-type": "application/json" } })

const LIMIT = 64 * 1024

/**
 * A body sent in chunks, with no content-length: the limit holds while it streams in. Such a body is
 * cut off once it outgrows the limit (the connection closes: it is never read whole); answers the
 * status, or "reset".
 */
const chunked = (url: string, bytes: number) =>
  Effect.async<number | "reset">((resume) => {
    const request = Http.request(url, { method: "POST", headers: { "content-type": "application/json", "transfer-encoding": "chunked" } }, (response) => {
      response.resume().on("end", () => resume(Effect.succeed(response.statusCode ?? 0)))
    })
    request.on("error", () => resume(Effect.succeed("reset" as const)))
    const piece = "x".repeat(8192)
    for (let sent = 0; sent < bytes; sent += piece.length) request.write(piece)
    request.end()
  })

describe("baton serve: the bad-input corpus", () => {
  it.scoped("each bad request: a clear error with a stable code, nothing written, the server still serves", () =>
    Effect.gen(function*() {
      const local = yield* localBackend.pipe(Effect.provide(Layer.merge(layerMemory, layerScripted([Turn.toolCalls([{ id: "c1", name: "Read" }])]))))
      const server = yield* serveOn(local, { maxBodyBytes: LIMIT })
      const conv = yield* local.createConversation({})
      const chunks = yield* collect(local.send(conv.id, input(user("go"))))
      const runId = chunks[0]!.run_id
      const idle = yield* local.createConversation({})
      const base = `/v1/conversations/${conv.id}`
      const cases: ReadonlyArray<Case> = [
        { name: "oversized body", method: "POST", path: "/v1/conversations", ...jsonBody({ title: "x".repeat(LIMIT) }), status: 413, code: "payload_too_large", mentions: "limit" },
        { name: "oversized send", method: "POST", path: `${base}/messages`, ...jsonBody({ messages: [user("x".repeat(LIMIT))] }), status: 413, code: "payload_too_large" },
        { name: "not JSON", method: "POST", path: `${base}/messages`, body: "{not json", headers: { "content-type": "application/json" }, status: 400, code: "invalid_input" },
        { name: "not JSON (create)", method: "POST", path: "/v1/conversations", body: "[1,", status: 400, code: "invalid_input" },
        { name: "wrong type", method: "POST", path: `${base}/messages`, ...jsonBody({ messages: "hello" }), status: 400, code: "invalid_input", mentions: "messages" },
        { name: "wrong nested type", method: "POST", path: `${base}/messages`, ...jsonBody({ messages: [{ type: "user_message", content: 5, otid: "o" }] }), status: 400, code: "invalid_input", mentions: "content" },
        { name: "no messages", method: "POST", path: `${base}/messages`, ...jsonBody({ messages: [] }), status: 400, code: "invalid_input" },
        { name: "unknown field", method: "POST", path: `${base}/messages`, ...jsonBody({ messages: [toolResult("c1")], colour: "red" }), status: 400, code: "invalid_input", mentions: "colour" },
        { name: "unknown settings key", method: "POST", path: "/v1/conversations", ...jsonBody({ settings: { sytem_prompt: "typo" } }), status: 400, code: "invalid_input", mentions: "sytem_prompt" },
        { name: "unknown field in a result", method: "POST", path: `${base}/tool-results`, ...jsonBody({ result: { ...toolResult("c1"), extra: true } }), status: 400, code: "invalid_input", mentions: "extra" },
        { name: "wrong type in PATCH", method: "PATCH", path: base, ...jsonBody({ title: 42 }), status: 400, code: "invalid_input", mentions: "title" },
        { name: "unknown conversation", method: "GET", path: "/v1/conversations/conv-nope", status: 404, code: "not_found" },
        { name: "send to an unknown conversation", method: "POST", path: "/v1/conversations/conv-nope/messages", ...jsonBody({ messages: [user("hi")] }), status: 404, code: "not_found" },
        { name: "result for an unknown conversation", method: "POST", path: "/v1/conversations/conv-nope/tool-results", ...jsonBody({ result: toolResult("c1") }), status: 404, code: "not_found" },
        { name: "result for an unknown call", method: "POST", path: `${base}/tool-results`, ...jsonBody({ result: toolResult("zz") }), status: 400, code: "invalid_tool_call_ids" },
        { name: "unknown run", method: "GET", path: "/v1/runs/run-nope/stream", status: 404, code: "not_found" },
        { name: "malformed conversation id", method: "GET", path: "/v1/conversations/%20%20", status: 400, code: "invalid_input" },
        { name: "malformed run id", method: "GET", path: "/v1/runs/%20/stream", status: 400, code: "invalid_input" },
        { name: "empty tool_call_id", method: "POST", path: `${base}/tool-results`, ...jsonBody({ result: { ...toolResult("c1"), tool_call_id: "" } }), status: 400, code: "invalid_input" },
        { name: "after negative", method: "GET", path: `/v1/runs/${runId}/stream?after=-1`, status: 400, code: "invalid_input", mentions: "after" },
        { name: "after not a number", method: "GET", path: `/v1/runs/${runId}/stream?after=abc`, status: 400, code: "invalid_input", mentions: "after" },
        { name: "after huge", method: "GET", path: `/v1/runs/${runId}/stream?after=99999999999999999999`, status: 400, code: "invalid_input", mentions: "after" },
        { name: "after fractional", method: "GET", path: `/v1/runs/${runId}/stream?after=1.5`, status: 400, code: "invalid_input", mentions: "after" },
        { name: "history after negative", method: "GET", path: `${base}/messages?after=-3`, status: 400, code: "invalid_input", mentions: "after" },
        { name: "trace segment 0", method: "GET", path: `${base}/trace/0`, status: 400, code: "invalid_input", mentions: "segment" },
        { name: "trace segment negative", method: "GET", path: `${base}/trace/-2`, status: 400, code: "invalid_input", mentions: "segment" },
        { name: "trace segment not a number", method: "GET", path: `${base}/trace/first`, status: 400, code: "invalid_input", mentions: "segment" },
        { name: "trace segment beyond the last", method: "GET", path: `${base}/trace/7`, status: 404, code: "not_found", mentions: "segment" },
        // Paths no route knows: the same JSON error as every route's, never an empty 404.
        { name: "a path out of a trace", method: "GET", path: `${base}/trace/../x`, status: 404, code: "not_found", mentions: "no such route" },
        { name: "an unknown path", method: "GET", path: "/v1/nothing-here", status: 404, code: "not_found", mentions: "GET /v1/nothing-here" },
        { name: "steering with no task running", method: "POST", path: `/v1/conversations/${idle.id}/steering`, ...jsonBody({ text: "hi" }), status: 409, code: "no_task", mentions: "as a prompt" },
        { name: "an unknown method on a known path", method: "DELETE", path: `${base}/steering`, status: 404, code: "not_found", mentions: "DELETE" }
      ]
      const before = { conversations: (yield* local.listConversations()).items, items: yield* local.history(conv.id, { limit: 1000 }) }
      for (const c of cases) {
        const response = yield* fetchJson(`${server.url}${c.path}`, {
          method: c.method,
          ...(c.body !== undefined ? { body: c.body } : {}),
          ...(c.headers !== undefined ? { headers: c.headers } : {})
        })
        assertErrorJson(response, c, c.name)
        const health = yield* fetchJson(`${server.url}/healthz`)
        assert.strictEqual(health.status, 200, `the server still serves after: ${c.name}`)
      }
      assert.include([413, "reset"], yield* chunked(`${server.url}/v1/conversations`, LIMIT * 4))
      // A send reads its own body: a chunked one is capped too.
      assert.include([413, "reset"], yield* chunked(`${server.url}${base}/messages`, LIMIT * 4))
      assert.strictEqual((yield* fetchJson(`${server.url}/healthz`)).status, 200)
      const after = { conversations: (yield* local.listConversations()).items, items: yield* local.history(conv.id, { limit: 1000 }) }
      assert.deepStrictEqual(after, before, "nothing was written")
      assert.deepStrictEqual(yield* local.heldSteering(idle.id), [], "the refused steering is not kept")
      assert.deepStrictEqual((yield* local.pendingApprovals(conv.id)).map((c) => String(c.tool_call_id)), ["c1"])
    }))
})
