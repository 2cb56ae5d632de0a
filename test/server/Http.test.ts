import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Schema } from "effect"
import * as Fs from "node:fs"
import { type Chunk, TaskEventFromJson } from "../../src/domain/Events.js"
import { ConversationId } from "../../src/domain/Ids.js"
import { layerScripted, type ScriptEntry, Turn } from "../../src/services/provider/Scripted.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { fetchJson, json, localBackend, readSse, remote, serveOn, type SseEvent } from "../support/serverHarness.js"
import { collect, input, toolResult, user } from "../support/testing.js"

const deps = (script: ReadonlyArray<ScriptEntry>) => Layer.merge(layerMemory, layerScripted(script))

/** A local backend, a server on it and a remote client, over `script`. */
const setup = (script: ReadonlyArray<ScriptEntry>, options: Parameters<typeof serveOn>[1] = {}) =>
  Effect.gen(function*() {
    const local = yield* localBackend
    const server = yield* serveOn(local, options)
    const client = yield* remote({ url: server.url })
    return { local, server, client }
  }).pipe(Effect.provide(deps(script)))

const decode = Schema.decodeUnknownSync(TaskEventFromJson)
const chunksOf = (events: ReadonlyArray<SseEvent>) => events.map((e) => decode(e.data) as Chunk)

describe("server HTTP protocol", () => {
  it.scoped("a run is text/event-stream: one chunk per event, id `<runId>:<seq>`, ending after the stop_reason; a replay is byte-identical", () =>
    Effect.gen(function*() {
      const { client, server } = yield* setup([Turn.text(["Hel", "lo"])])
      const conv = yield* client.createConversation({})
      const live = yield* readSse(`${server.url}/v1/conversations/${conv.id}/messages`, json({ messages: [user("hi")] }))
      assert.strictEqual(live.status, 200)
      assert.strictEqual(live.headers.get("content-type"), "text/event-stream")
      assert.strictEqual(live.headers.get("cache-control"), "no-cache")
      const chunks = chunksOf(live.events)
      assert.deepStrictEqual(chunks.map((c) => c.seq), [1, 2, 3, 4, 5, 6, 7])
      assert.deepStrictEqual(live.events.map((e) => e.id), chunks.map((c) => `${c.run_id}:${c.seq}`))
      assert.strictEqual(chunks.at(-1)!.type, "stop_reason")
      assert.isTrue(live.ended, "a complete stream says so with its end event")
      const replay = yield* readSse(`${server.url}/v1/runs/${chunks[0]!.run_id}/stream?after=0`)
      assert.strictEqual(replay.raw, live.raw)
      const past = yield* readSse(`${server.url}/v1/runs/${chunks[0]!.run_id}/stream?after=${chunks.length}`)
      assert.deepStrictEqual([past.events, past.ended], [[], true], "asking past the end gets the end at once")
    }))

  it.scoped("POST /v1/conversations with {} or no body creates a conversation with the server's defaults (201)", () =>
    Effect.gen(function*() {
      const local = yield* localBackend.pipe(Effect.provide(deps([])))
      const server = yield* serveOn(local, { conversationDefaults: { system_prompt: "server default" } })
      // The third is what `curl -X POST -d '{}'` sends: a form content type.
      const curl = { method: "POST", body: "{}", headers: { "content-type": "application/x-www-form-urlencoded" } }
      for (const init of [json({}), { method: "POST" }, curl, json({ title: "named" })]) {
        const created = yield* fetchJson(`${server.url}/v1/conversations`, init)
        assert.strictEqual(created.status, 201)
        const body = created.body as { id: string; settings: { system_prompt: string; tools: ReadonlyArray<unknown> } }
        assert.strictEqual(body.settings.system_prompt, "server default")
        assert.deepStrictEqual(body.settings.tools, [])
        assert.strictEqual((yield* local.getConversation(ConversationId.make(body.id))).settings.system_prompt, "server default")
      }
      const explicit = yield* fetchJson(`${server.url}/v1/conversations`, json({ settings: { system_prompt: "mine" } }))
      assert.strictEqual((explicit.body as { settings: { system_prompt: string } }).settings.system_prompt, "mine")
    }))

  it.scoped("POST /v1/conversations/:id/fork: no body forks at the end (201); a bad position or body is 400 and makes nothing", () =>
    Effect.gen(function*() {
      const { client, local, server } = yield* setup([Turn.text("hello")])
      const conv = yield* client.createConversation({})
      yield* collect(client.send(conv.id, input(user("hi"))))
      const last = (yield* local.history(conv.id, { limit: 1000 })).at(-1)!.position
      const bare = yield* fetchJson(`${server.url}/v1/conversations/${conv.id}/fork`, { method: "POST" })
      assert.strictEqual(bare.status, 201)
      assert.deepStrictEqual((bare.body as { forked_from: unknown }).forked_from, { conversation_id: conv.id, at: last })
      const count = (yield* local.listConversations()).items.length
      const beyond = yield* fetchJson(`${server.url}/v1/conversations/${conv.id}/fork`, json({ at: last + 5 }))
      assert.strictEqual(beyond.status, 400)
      const bad = yield* fetchJson(`${server.url}/v1/conversations/${conv.id}/fork`, json({ at: "the end" }))
      assert.strictEqual(bad.status, 400)
      const unknown = yield* fetchJson(`${server.url}/v1/conversations/conv-nope/fork`, { method: "POST" })
      assert.strictEqual(unknown.status, 404)
      assert.strictEqual((yield* local.listConversations()).items.length, count)
    }))

  it.scoped("GET /v1/runs/:id/stream resumes after ?after=N; a Last-Event-ID of this run wins; unknown runs are 404", () =>
    Effect.gen(function*() {
      const { client, server } = yield* setup([Turn.text(["a", "b", "c", "d"])])
      const conv = yield* client.createConversation({})
      const runId = (yield* collect(client.send(conv.id, input(user("go")))))[0]!.run_id
      const from = (query: string, headers: Record<string, string> = {}) =>
        Effect.map(readSse(`${server.url}/v1/runs/${runId}/stream${query}`, { headers }), (read) => chunksOf(read.events).map((c) => c.seq))
      assert.deepStrictEqual(yield* from("?after=6"), [7, 8, 9])
      assert.deepStrictEqual(yield* from("?after=1", { "last-event-id": `${runId}:7` }), [8, 9])
      assert.deepStrictEqual(yield* from("?after=6", { "last-event-id": "run-other:2" }), [7, 8, 9])
      assert.deepStrictEqual(yield* from("", { "last-event-id": `${runId}:8` }), [9])
      const missing = yield* fetchJson(`${server.url}/v1/runs/run-nope/stream`)
      assert.strictEqual(missing.status, 404)
      assert.deepInclude(missing.body, { code: "not_found", entity: "run", id: "run-nope" })
    }))

  it.scoped("errors are JSON with a stable code: not_found, approval_pending, invalid_tool_call_ids, invalid_input", () =>
    Effect.gen(function*() {
      const { client, server } = yield* setup([Turn.toolCalls([{ id: "c1", name: "Read" }, { id: "c2", name: "Read" }])])
      const conv = yield* client.createConversation({})
      yield* collect(client.send(conv.id, input(user("go"))))
      const messages = `${server.url}/v1/conversations/${conv.id}/messages`

      const notFound = yield* fetchJson(`${server.url}/v1/conversations/conv-nope`)
      assert.strictEqual(notFound.status, 404)
      assert.deepInclude(notFound.body, { code: "not_found", entity: "conversation", id: "conv-nope" })

      const pending = yield* fetchJson(messages, json({ messages: [user("hello?")] }))
      assert.strictEqual(pending.status, 409)
      assert.deepInclude(pending.body, { code: "approval_pending", conversation_id: conv.id, tool_call_ids: ["c1", "c2"] })

      const wrong = yield* fetchJson(messages, json({ messages: [toolResult("c1"), toolResult("zz")] }))
      assert.strictEqual(wrong.status, 400)
      assert.deepInclude(wrong.body, { code: "invalid_tool_call_ids", unknown: ["zz"], missing: ["c2"] })

      for (const body of ["{not json", JSON.stringify({ messages: "nope" }), JSON.stringify({ messages: [{ type: "user_message" }] })]) {
        const bad = yield* fetchJson(messages, { method: "POST", headers: { "content-type": "application/json" }, body })
        assert.strictEqual(bad.status, 400, body)
        assert.strictEqual((bad.body as { code: string }).code, "invalid_input", body)
      }
      const badQuery = yield* fetchJson(`${server.url}/v1/conversations/${conv.id}/messages?limit=lots`)
      assert.strictEqual(badQuery.status, 400)
      assert.strictEqual((badQuery.body as { code: string }).code, "invalid_input")
    }))

  it.scoped("cancel takes no body at all, or a snake_case carry-over", () =>
    Effect.gen(function*() {
      const { client, local, server } = yield* setup([
        Turn.toolCalls([{ id: "c1", name: "Read" }]),
        Turn.toolCalls([{ id: "c2", name: "Read" }])
      ])
      const conv = yield* client.createConversation({})
      yield* collect(client.send(conv.id, input(user("one"))))
      const bare = yield* fetchJson(`${server.url}/v1/conversations/${conv.id}/cancel`, { method: "POST" })
      assert.strictEqual(bare.status, 204)
      assert.deepStrictEqual(yield* local.pendingApprovals(conv.id), [])
      yield* collect(client.send(conv.id, input(user("two"))))
      const carried = yield* fetchJson(`${server.url}/v1/conversations/${conv.id}/cancel`, json({ results: [toolResult("c2", "done")], turn_aborted: "[turn_aborted]x[/turn_aborted]" }))
      assert.strictEqual(carried.status, 204)
      const returns = (yield* local.history(conv.id)).flatMap((h) => (h.item.type === "tool_return" ? [[h.item.tool_call_id, h.item.status]] : []))
      assert.deepStrictEqual(returns, [["c1", "interrupted"], ["c2", "success"]])
      const bad = yield* fetchJson(`${server.url}/v1/conversations/${conv.id}/cancel`, json({ results: "all of them" }))
      assert.strictEqual(bad.status, 400)
      assert.strictEqual((bad.body as { code: string }).code, "invalid_input")
    }))

  it.scoped("heartbeat comments flow while a run is silent", () =>
    Effect.gen(function*() {
      const { client, server } = yield* setup([Turn.stall({ text: "thinking" })], { heartbeatMs: 10 })
      const conv = yield* client.createConversation({})
      const read = yield* readSse(`${server.url}/v1/conversations/${conv.id}/messages`, json({ messages: [user("go")] }), (_, comments) => comments.length >= 2)
      assert.deepStrictEqual(read.comments.slice(0, 2), [": heartbeat", ": heartbeat"])
      assert.deepStrictEqual(chunksOf(read.events).map((c) => c.type), ["request_begin", "text_delta"])
      yield* client.cancel(conv.id)
    }))

  it.scoped("the remote backend answers every call exactly as the local one", () =>
    Effect.gen(function*() {
      const { client, local } = yield* setup([
        Turn.toolCalls([{ id: "c1", name: "Read", args: { file_path: "a" } }]),
        Turn.text("A short title"),
        Turn.text("[summary]they read a[/summary]")
      ])
      const conv = yield* client.createConversation({ system_prompt: "be brief" }, { title: "first" })
      assert.deepStrictEqual(yield* local.getConversation(conv.id), conv)
      yield* client.createConversation({})
      const chunks = yield* collect(client.send(conv.id, input(user("read a"))))
      assert.deepStrictEqual(yield* collect(client.streamRun(chunks[0]!.run_id)), chunks)
      assert.deepStrictEqual(yield* client.pendingApprovals(conv.id), yield* local.pendingApprovals(conv.id))
      const all = yield* client.history(conv.id)
      assert.deepStrictEqual(all, yield* local.history(conv.id))
      const cursor = { before: all.at(-1)!.position, limit: 2 }
      assert.deepStrictEqual(yield* client.history(conv.id, cursor), yield* local.history(conv.id, cursor))
      assert.deepStrictEqual(yield* client.backfill(conv.id), yield* local.backfill(conv.id))
      const page = yield* client.listConversations({ limit: 1 })
      assert.deepStrictEqual(page, yield* local.listConversations({ limit: 1 }))
      assert.deepStrictEqual(yield* client.listConversations({ limit: 1, before: page.next! }), yield* local.listConversations({ limit: 1, before: page.next! }))
      yield* client.cancel(conv.id, { results: [toolResult("c1", "text of a")], abort: true })
      assert.deepStrictEqual(yield* local.pendingApprovals(conv.id), [])
      assert.strictEqual(yield* client.generateTitle(conv.id), "A short title")
      const renamed = yield* client.updateConversation(conv.id, { title: "renamed" })
      assert.deepStrictEqual(renamed, yield* local.getConversation(conv.id))
      assert.strictEqual(yield* client.compactability(conv.id), "ok")
      const compaction = yield* collect(client.compact(conv.id, "manual"))
      const stop = compaction.at(-1)!
      assert.strictEqual(stop.type === "stop_reason" && stop.reason, "end_turn")
      assert.strictEqual(yield* client.compactability(conv.id), yield* local.compactability(conv.id))
      for (const segment of [1, 2]) assert.strictEqual(yield* client.exportTrace(conv.id, segment), yield* local.exportTrace(conv.id, segment))
      const missing = ConversationId.make("conv-nope")
      // As data: each side's tracing annotates its own error object with its own span.
      const asData = (e: Either.Either<unknown, unknown>) => Either.mapLeft(e, (error) => JSON.parse(JSON.stringify(error)) as unknown)
      assert.deepStrictEqual(asData(yield* Effect.either(client.getConversation(missing))), asData(yield* Effect.either(local.getConversation(missing))))
      assert.isTrue(Either.isLeft(yield* Effect.either(client.history(missing))))
    }))

  it.scoped("the OpenAPI document is valid JSON listing every endpoint; /docs serves Swagger UI", () =>
    Effect.gen(function*() {
      const { server } = yield* setup([])
      const response = yield* Effect.promise(() => fetch(`${server.url}/openapi.json`))
      const spec = JSON.parse(yield* Effect.promise(() => response.text())) as {
        openapi: string
        info: { version: string }
        paths: Record<string, Record<string, { security: ReadonlyArray<unknown>; responses: Record<string, { content?: Record<string, unknown> }> }>>
        components: { securitySchemes: Record<string, unknown>; schemas: Record<string, unknown> }
      }
      assert.match(spec.openapi, /^3\./)
      // The package's version, from package.json (its one source).
      assert.strictEqual(spec.info.version, (JSON.parse(Fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version)
      const operations = Object.entries(spec.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
      assert.sameMembers(operations, [
        "POST /v1/conversations",
        "GET /v1/conversations",
        "GET /v1/conversations/{id}",
        "PATCH /v1/conversations/{id}",
        "POST /v1/conversations/{id}/messages",
        "GET /v1/conversations/{id}/messages",
        "GET /v1/runs/{id}",
        "GET /v1/runs/{id}/stream",
        "POST /v1/conversations/{id}/cancel",
        "GET /v1/conversations/{id}/pending-approvals",
        "POST /v1/conversations/{id}/tool-results",
        "GET /v1/conversations/{id}/backfill",
        "POST /v1/conversations/{id}/skip-reconnect-wait",
        "POST /v1/conversations/{id}/steering",
        "GET /v1/conversations/{id}/steering",
        "POST /v1/conversations/{id}/steering/take",
        "POST /v1/conversations/{id}/compact",
        "GET /v1/conversations/{id}/compactability",
        "POST /v1/conversations/{id}/title",
        "POST /v1/conversations/{id}/fork",
        "GET /v1/conversations/{id}/trace/{segment}",
        "GET /v1/usage",
        "GET /healthz"
      ])
      assert.deepStrictEqual(Object.keys(spec.paths["/v1/runs/{id}/stream"]!.get!.responses["200"]!.content!), ["text/event-stream"])
      assert.deepStrictEqual(spec.paths["/healthz"]!.get!.security, [])
      assert.deepStrictEqual(spec.paths["/v1/conversations"]!.get!.security, [{ bearer: [] }])
      assert.deepStrictEqual(spec.components.securitySchemes, { bearer: { type: "http", scheme: "bearer" } })
      for (const name of ["ConversationBusy", "ApprovalPending", "InvalidToolCallIds", "ToolCallAnswered", "NotFound", "Unauthorized", "InvalidInput"]) {
        assert.property(spec.components.schemas, name)
      }
      const docs = yield* Effect.promise(() => fetch(`${server.url}/docs`).then(async (r) => [r.headers.get("content-type"), await r.text()] as const))
      assert.include(docs[0], "text/html")
      assert.include(docs[1], "swagger")
    }))
})
