import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, type Layer, Stream, TestClock } from "effect"
import type { Chunk } from "../../src/domain/Events.js"
import { IMAGE_OMITTED_TEXT } from "../../src/domain/Messages.js"
import { RunId } from "../../src/domain/Ids.js"
import * as PE from "../../src/domain/ProviderError.js"
import { Backend } from "../../src/services/Backend.js"
import { ProviderScript, type ScriptEntry, Turn } from "../../src/services/provider/Scripted.js"
import { lineageContract } from "./contract/lineage.js"
import { rerunContract } from "./contract/rerun.js"
import { resultsContract } from "./contract/results.js"
import { awaitSleeps, collect, eventually, input, toolResult, types, user } from "./testing.js"

/** Builds a fresh Backend (and the scripted model behind it) for one test. */
export type MakeBackend = (script: ReadonlyArray<ScriptEntry>) => Layer.Layer<Backend | ProviderScript, unknown>

const settings = { system_prompt: "be brief", tools: [{ name: "Read", description: "read", parameters: { type: "object" } }] }

const timeout = new PE.ProviderTimeout({ phase: "stall", afterMs: 1000, message: "no event for 1 s" })
const down = new PE.ProviderServerError({ status: 503, message: "service unavailable" })

const textOf = (chunks: ReadonlyArray<Chunk>) =>
  chunks.flatMap((c) => (c.type === "assistant_message" ? [c.content] : [])).join("")

/**
 * The Backend contract: every backend (in-process, remote over HTTP) must pass all of it, so the
 * Session cannot tell them apart.
 */
export const backendContract = (name: string, make: MakeBackend) =>
  describe(`Backend contract: ${name}`, () => {
    const withBackend = <A, E>(script: ReadonlyArray<ScriptEntry>, body: (backend: Backend["Type"]) => Effect.Effect<A, E, Backend | ProviderScript>) =>
      Effect.flatMap(Backend, body).pipe(Effect.provide(make(script)))

    it.effect("plain answer: numbered chunks in order, one stop_reason", () =>
      withBackend([Turn.text(["Hel", "lo"])], (backend) =>
        Effect.gen(function*() {
          const conv = yield* backend.createConversation(settings)
          const chunks = yield* collect(backend.send(conv.id, input(user("hi"))))
          assert.deepStrictEqual(types(chunks), [
            "request_begin", "text_delta", "text_delta", "assistant_message", "token_usage", "request_end", "stop_reason"
          ])
          assert.deepStrictEqual(chunks.map((c) => c.seq), [1, 2, 3, 4, 5, 6, 7])
          assert.isTrue(chunks.every((c) => c.run_id === chunks[0]!.run_id))
          assert.strictEqual(textOf(chunks), "Hello")
          const end = chunks.at(-2)!
          assert.deepStrictEqual(end.type === "request_end" && end.status, "ok")
          const stop = chunks.at(-1)!
          assert.deepStrictEqual(stop.type === "stop_reason" && stop.reason, "end_turn")
        })))

    it.effect("two parallel tool calls → requires_approval; results → next run → answer", () =>
      withBackend([Turn.toolCalls([{ id: "c1", name: "Read", args: { file_path: "a" } }, { id: "c2", name: "Read", args: { file_path: "b" } }]), Turn.text("done")], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          const first = yield* collect(backend.send(conv.id, input(user("read both"))))
          assert.deepStrictEqual(first.flatMap((c) => (c.type === "tool_call" ? [String(c.tool_call_id)] : [])), ["c1", "c2"])
          const stop = first.at(-1)!
          assert.strictEqual(stop.type === "stop_reason" && stop.reason, "requires_approval")
          assert.deepStrictEqual((yield* backend.pendingApprovals(conv.id)).map((c) => c.tool_call_id), ["c1", "c2"])
          const second = yield* collect(backend.send(conv.id, input(toolResult("c2", "B"), toolResult("c1", "A"))))
          assert.strictEqual(textOf(second), "done")
          assert.deepStrictEqual(yield* backend.pendingApprovals(conv.id), [])
          const requests = yield* script.requests
          const history = requests[1]!.history
          // results reach the model in call order, right after their calls
          assert.deepStrictEqual(history.map((m) => m.type), ["user_message", "tool_call", "tool_call", "tool_return", "tool_return"])
          assert.deepStrictEqual(history.slice(3).map((m) => m.type === "tool_return" && m.content), ["A", "B"])
        })))

    it.effect("timeout after partial text: retry after exactly 250 ms with [turn_retried], no tool re-run", () =>
      withBackend([
        Turn.fail(timeout, [
          { _tag: "ToolCallStart", id: "c1", name: "Read" },
          { _tag: "ToolCallDelta", id: "c1", argumentsDelta: "{}" },
          { _tag: "ToolCallEnd", id: "c1", name: "Read", arguments: "{}" },
          { _tag: "TextDelta", text: "I will rea" }
        ]),
        Turn.text("d the file")
      ], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          const fiber = yield* Effect.fork(collect(backend.send(conv.id, input(user("go")))))
          yield* awaitSleeps()
          yield* TestClock.adjust(249)
          assert.strictEqual((yield* script.requests).length, 1)
          yield* TestClock.adjust(1)
          const chunks = yield* Fiber.join(fiber)
          assert.deepStrictEqual(types(chunks).filter((t) => !t.endsWith("_delta")), [
            "request_begin", "tool_call", "request_end", "turn_retried", "request_begin", "assistant_message", "token_usage", "request_end", "stop_reason"
          ])
          const retrying = chunks.find((c) => c.type === "request_end")!
          assert.deepStrictEqual(retrying.type === "request_end" && [retrying.status, retrying.retry_in_ms, retrying.error?.tag], ["retrying", 250, "ProviderTimeout"])
          const retry = (yield* script.requests)[1]!
          const block = retry.history.at(-1)!
          assert.strictEqual(block.type, "user_message")
          assert.match(block.type === "user_message" ? block.content : "", /^\[turn_retried\][\s\S]*I will rea[\s\S]*c1[\s\S]*\[\/turn_retried\]$/)
          // the call from the failed attempt stands (it is not re-issued) and waits for its result
          assert.deepStrictEqual((yield* backend.pendingApprovals(conv.id)).map((c) => c.tool_call_id), ["c1"])
          const stop = chunks.at(-1)!
          assert.strictEqual(stop.type === "stop_reason" && stop.reason, "requires_approval")
        })))

    it.effect("five failures then success: waits 250+500+1000+2000+4000 ms", () =>
      withBackend([...Array.from({ length: 5 }, () => Turn.fail(down)), Turn.text("finally")], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          const fiber = yield* Effect.fork(collect(backend.send(conv.id, input(user("go")))))
          for (const [i, wait] of [250, 500, 1000, 2000, 4000].entries()) {
            yield* awaitSleeps()
            yield* TestClock.adjust(wait - 1)
            assert.strictEqual((yield* script.requests).length, i + 1)
            yield* TestClock.adjust(1)
            yield* script.awaitRequests(i + 2)
          }
          const chunks = yield* Fiber.join(fiber)
          assert.strictEqual(textOf(chunks), "finally")
          assert.deepStrictEqual(chunks.filter((c) => c.type === "request_end").map((c) => c.type === "request_end" && c.retry_in_ms), [250, 500, 1000, 2000, 4000, undefined])
        })))

    it.effect("six failures → request_end{failed}, stop_reason error", () =>
      withBackend(Array.from({ length: 6 }, () => Turn.fail(down)), (backend) =>
        Effect.gen(function*() {
          const conv = yield* backend.createConversation(settings)
          const fiber = yield* Effect.fork(collect(backend.send(conv.id, input(user("go")))))
          for (const wait of [250, 500, 1000, 2000, 4000]) {
            yield* awaitSleeps()
            yield* TestClock.adjust(wait)
          }
          const chunks = yield* Fiber.join(fiber)
          const ends = chunks.filter((c) => c.type === "request_end").map((c) => c.type === "request_end" && c.status)
          assert.deepStrictEqual(ends, ["retrying", "retrying", "retrying", "retrying", "retrying", "failed"])
          const stop = chunks.at(-1)!
          assert.deepStrictEqual(stop.type === "stop_reason" && [stop.reason, stop.error?.tag], ["error", "ProviderServerError"])
          // the conversation is free again
          const script = yield* ProviderScript
          yield* script.push(Turn.text("back"))
          assert.strictEqual(textOf(yield* collect(backend.send(conv.id, input(user("again"))))), "back")
        })))

    it.effect("an empty answer is retried (500 ms, then 1000 ms with a reminder), never reported as an answer", () =>
      withBackend([Turn.text(""), Turn.text([]), Turn.text("now with content")], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          const fiber = yield* Effect.fork(collect(backend.send(conv.id, input(user("go")))))
          yield* awaitSleeps()
          yield* TestClock.adjust(499)
          assert.strictEqual((yield* script.requests).length, 1)
          yield* TestClock.adjust(1)
          yield* script.awaitRequests(2)
          yield* awaitSleeps()
          yield* TestClock.adjust(1000)
          const chunks = yield* Fiber.join(fiber)
          const ends = chunks.flatMap((c) => (c.type === "request_end" ? [[c.status, c.retry_in_ms, c.error?.tag]] : []))
          assert.deepStrictEqual(ends, [["retrying", 500, "EmptyResponse"], ["retrying", 1000, "EmptyResponse"], ["ok", undefined, undefined]])
          const requests = yield* script.requests
          const reminded = requests.map((r) => r.history.some((m) => m.type === "user_message" && m.content.includes("previous response was empty")))
          assert.deepStrictEqual(reminded, [false, false, true])
          assert.strictEqual(textOf(chunks), "now with content")
        })))

    it.effect("the thinking level of a run is kept across its reconnects", () =>
      withBackend([Turn.fail(down), Turn.text("ok")], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          const fiber = yield* Effect.fork(collect(backend.send(conv.id, { messages: [user("go")], thinking: "high" })))
          yield* awaitSleeps()
          yield* TestClock.adjust(250)
          yield* Fiber.join(fiber)
          assert.deepStrictEqual((yield* script.requests).map((r) => r.thinking), ["high", "high"])
        })))

    it.effect("429 with retry-after 2 s waits 2 s", () =>
      withBackend([Turn.fail(new PE.ProviderRateLimited({ retryAfterMs: 2000, message: "slow down" })), Turn.text("ok")], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          const fiber = yield* Effect.fork(collect(backend.send(conv.id, input(user("go")))))
          yield* awaitSleeps()
          yield* TestClock.adjust(1999)
          assert.strictEqual((yield* script.requests).length, 1)
          yield* TestClock.adjust(1)
          const chunks = yield* Fiber.join(fiber)
          const first = chunks.find((c) => c.type === "request_end")!
          assert.strictEqual(first.type === "request_end" && first.retry_in_ms, 2000)
        })))

    it.effect("401 → auth after one request, never retried", () =>
      withBackend([Turn.fail(new PE.ProviderAuth({ status: 401, message: "invalid x-api-key" }))], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          const chunks = yield* collect(backend.send(conv.id, input(user("go"))))
          assert.deepStrictEqual(types(chunks), ["request_begin", "request_end", "stop_reason"])
          const [, end, stop] = chunks
          assert.strictEqual(end!.type === "request_end" && end!.status, "auth")
          assert.strictEqual(stop!.type === "stop_reason" && stop!.reason, "auth")
          assert.strictEqual((yield* script.requests).length, 1)
        })))

    it.effect("skipReconnectWait ends the wait now; the count is unchanged", () =>
      withBackend([Turn.fail(down), Turn.fail(down), Turn.text("ok")], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          const fiber = yield* Effect.fork(collect(backend.send(conv.id, input(user("go")))))
          yield* awaitSleeps()
          yield* backend.skipReconnectWait(conv.id)
          yield* script.awaitRequests(2)
          // The skipped sleep stays in the TestClock's list: the second wait is the second sleep.
          yield* awaitSleeps(2)
          yield* backend.skipReconnectWait(conv.id)
          const chunks = yield* Fiber.join(fiber)
          // the second wait is still the second step of the ladder
          assert.deepStrictEqual(chunks.filter((c) => c.type === "request_end").map((c) => c.type === "request_end" && c.retry_in_ms), [250, 500, undefined])
        })))

    it.effect("cancel mid-stream: request_end{cancelled}, stop_reason cancelled, the text so far stays in the trace", () =>
      withBackend([Turn.stall({ text: "half an ans" })], (backend) =>
        Effect.gen(function*() {
          const conv = yield* backend.createConversation(settings)
          const seen: Array<Chunk> = []
          const fiber = yield* Effect.fork(Stream.runForEach(backend.send(conv.id, input(user("go"))), (c) => Effect.sync(() => seen.push(c))))
          yield* eventually(Effect.sync(() => seen.some((c) => c.type === "text_delta")), "a text delta")
          yield* backend.cancel(conv.id)
          yield* Fiber.join(fiber)
          assert.deepStrictEqual(types(seen).slice(-2), ["request_end", "stop_reason"])
          const stop = seen.at(-1)!
          assert.strictEqual(stop.type === "stop_reason" && stop.reason, "cancelled")
          const history = yield* backend.history(conv.id)
          assert.isTrue(history.some((h) => h.item.type === "assistant_message" && h.item.content === "half an ans" && !h.inContext))
        })))

    it.effect("the run belongs to the backend: a reader that stops after 3 chunks loses nothing", () =>
      withBackend([Turn.text(["a", "b", "c", "d", "e"])], (backend) =>
        Effect.gen(function*() {
          const conv = yield* backend.createConversation(settings)
          const head = yield* collect(backend.send(conv.id, input(user("go"))).pipe(Stream.take(3)))
          assert.deepStrictEqual(head.map((c) => c.seq), [1, 2, 3])
          const rest = yield* collect(backend.streamRun(head[0]!.run_id, { after: 3 }))
          assert.deepStrictEqual(rest.map((c) => c.seq), Array.from({ length: rest.length }, (_, i) => i + 4))
          assert.strictEqual(rest.at(-1)!.type, "stop_reason")
          assert.strictEqual(textOf(rest), "abcde")
        })))

    it.effect("getRun: a run's record — running with its owner while it streams, then its status and stop reason; an unknown id is NotFound", () =>
      withBackend([Turn.stall({ text: "wait" }), Turn.text("done")], (backend) =>
        Effect.gen(function*() {
          const conv = yield* backend.createConversation(settings)
          const first = yield* Effect.fork(collect(backend.send(conv.id, input(user("go")))))
          const runId = yield* eventually(Effect.map(backend.history(conv.id), (items) => items.some((h) => h.item.type === "request_begin")), "the run began").pipe(
            Effect.zipRight(backend.history(conv.id)),
            Effect.map((items) => items.find((h) => h.item.type === "request_begin")!.item.run_id!)
          )
          const running = yield* backend.getRun(runId)
          assert.deepStrictEqual([running.status, running.conversation_id, running.kind, running.stop_reason], ["running", conv.id, "turn", undefined])
          assert.isString(running.owner)
          yield* backend.cancel(conv.id)
          yield* Fiber.join(first)
          const done = yield* backend.getRun(runId)
          assert.deepStrictEqual([done.status, done.stop_reason], ["cancelled", "cancelled"])
          const chunks = yield* collect(backend.streamRun(runId))
          assert.strictEqual(done.last_seq, chunks.at(-1)!.seq)
          const missing = yield* Effect.either(backend.getRun(RunId.make("no-such-run")))
          assert.isTrue(Either.isLeft(missing) && missing.left._tag === "NotFound")
        })))

    it.effect("streamRun of a finished run: the rest from any seq, and nothing (but an end) from its last", () =>
      withBackend([Turn.text("done")], (backend) =>
        Effect.gen(function*() {
          const conv = yield* backend.createConversation(settings)
          const all = yield* collect(backend.send(conv.id, input(user("go"))))
          const runId = all[0]!.run_id
          assert.deepStrictEqual(yield* collect(backend.streamRun(runId, { after: 0 })), all)
          assert.deepStrictEqual((yield* collect(backend.streamRun(runId, { after: all.length - 2 }))).map((c) => c.seq), [all.length - 1, all.length])
          assert.deepStrictEqual(yield* collect(backend.streamRun(runId, { after: all.length })), [])
        })))

    it.effect("sending an otid again starts nothing: the same run's stream comes back", () =>
      withBackend([Turn.text("once")], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          const message = user("hello")
          const first = yield* collect(backend.send(conv.id, input(message)))
          const again = yield* collect(backend.send(conv.id, input(message)))
          assert.deepStrictEqual(again, first)
          assert.strictEqual((yield* script.requests).length, 1)
        })))

    it.effect("the same otid sent twice at once (a client retrying a cut request) shares one run, never a Conflict with itself", () =>
      withBackend([Turn.text(["on", "ce"])], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          const message = user("hello")
          const [a, b] = yield* Effect.all([collect(backend.send(conv.id, input(message))), collect(backend.send(conv.id, input(message)))], {
            concurrency: "unbounded"
          })
          assert.deepStrictEqual(b, a)
          assert.strictEqual(textOf(a), "once")
          assert.strictEqual((yield* script.requests).length, 1)
        })))

    it.effect("a second send while a run is active → Conflict with the active run id", () =>
      withBackend([Turn.stall({ text: "thinking" })], (backend) =>
        Effect.gen(function*() {
          const conv = yield* backend.createConversation(settings)
          const head = yield* collect(backend.send(conv.id, input(user("one"))).pipe(Stream.take(1)))
          const second = yield* Effect.either(collect(backend.send(conv.id, input(user("two")))))
          assert.isTrue(Either.isLeft(second))
          if (Either.isLeft(second)) {
            assert.strictEqual(second.left._tag, "Conflict")
            assert.strictEqual(second.left._tag === "Conflict" && second.left.runId, head[0]!.run_id)
          }
          yield* backend.cancel(conv.id)
        })))

    it.effect("user text while calls are pending → ApprovalPending with the ids; wrong result ids → InvalidToolCallIds", () =>
      withBackend([Turn.toolCalls([{ id: "c1", name: "Read" }, { id: "c2", name: "Read" }])], (backend) =>
        Effect.gen(function*() {
          const conv = yield* backend.createConversation(settings)
          yield* collect(backend.send(conv.id, input(user("go"))))
          const pending = yield* Effect.either(collect(backend.send(conv.id, input(user("hello?")))))
          assert.isTrue(Either.isLeft(pending) && pending.left._tag === "ApprovalPending")
          if (Either.isLeft(pending) && pending.left._tag === "ApprovalPending") assert.deepStrictEqual(pending.left.toolCallIds.map(String), ["c1", "c2"])
          const wrong = yield* Effect.either(collect(backend.send(conv.id, input(toolResult("c1"), toolResult("zz")))))
          assert.isTrue(Either.isLeft(wrong) && wrong.left._tag === "InvalidToolCallIds")
          if (Either.isLeft(wrong) && wrong.left._tag === "InvalidToolCallIds") {
            assert.deepStrictEqual([wrong.left.unknown.map(String), wrong.left.missing.map(String)], [["zz"], ["c2"]])
          }
          assert.deepStrictEqual((yield* backend.pendingApprovals(conv.id)).length, 2)
        })))

    it.effect("cancel with carry-over closes every pending call exactly once", () =>
      withBackend([Turn.toolCalls([{ id: "c1", name: "Read" }, { id: "c2", name: "Bash" }]), Turn.text("ok")], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          yield* collect(backend.send(conv.id, input(user("go"))))
          yield* backend.cancel(conv.id, { results: [toolResult("c1", "file text")], abort: true })
          assert.deepStrictEqual(yield* backend.pendingApprovals(conv.id), [])
          yield* collect(backend.send(conv.id, input(user("next"))))
          const history = (yield* script.requests)[1]!.history
          const returns = history.flatMap((m) => (m.type === "tool_return" ? [[m.tool_call_id, m.status]] : []))
          assert.deepStrictEqual(returns, [["c1", "success"], ["c2", "interrupted"]])
          const trace = yield* backend.history(conv.id)
          assert.isTrue(trace.some((h) => h.item.type === "abort"))
          assert.isFalse(trace.some((h) => h.item.type === "tool_return" && h.item.status === "interrupted" && h.inTrace))
        })))

    it.effect("a run that breaks unexpectedly still ends with a stop_reason and frees the conversation", () =>
      withBackend([], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          const chunks = yield* collect(backend.send(conv.id, input(user("no script for this"))))
          const stop = chunks.at(-1)!
          assert.deepStrictEqual(stop.type === "stop_reason" && [stop.reason, stop.error?.tag], ["error", "InternalError"])
          yield* script.push(Turn.text("fine"))
          assert.strictEqual(textOf(yield* collect(backend.send(conv.id, input(user("again"))))), "fine")
        })))

    resultsContract(withBackend)
    lineageContract(withBackend)
    rerunContract(withBackend)

    it.effect("a request refused as too large is sent once more with its images replaced by a placeholder", () =>
      withBackend([Turn.fail(new PE.ProviderRequestTooLarge({ message: "request_too_large: 413" })), Turn.text("I could not see the image.")], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          const image = { media_type: "image/png" as const, data: "iVBORw0KGgo=" }
          const chunks = yield* collect(backend.send(conv.id, input({ ...user("what is this?"), images: [image] })))
          const [first, second] = yield* script.requests
          const prompt = (request: typeof first) => request!.history.find((m) => m.type === "user_message")
          assert.deepStrictEqual(prompt(first)?.type === "user_message" && prompt(first)?.images, [image])
          const retried = prompt(second)
          assert.isTrue(retried?.type === "user_message" && retried.images === undefined)
          assert.strictEqual(retried?.type === "user_message" && retried.content, `what is this?\n${IMAGE_OMITTED_TEXT}`)
          const stop = chunks.at(-1)!
          assert.strictEqual(stop.type === "stop_reason" && stop.reason, "end_turn")
          assert.strictEqual(textOf(chunks), "I could not see the image.")
          // The image itself stays in the history: only that request went without it.
          const stored = (yield* backend.history(conv.id)).find((h) => h.item.type === "user_message")!.item
          assert.deepStrictEqual(stored.type === "user_message" && stored.images, [image])
        })))

    it.effect("usage: every model request's usage is recorded — a failed attempt's, the turn's, the compaction's, the title's — and totalled", () =>
      withBackend([
        Turn.fail(down, [{ _tag: "TextDelta", text: "par" }, { _tag: "Usage", inputTokens: 7, outputTokens: 1, cachedInputTokens: 0, totalTokens: 8 }]),
        Turn.text("one", { usage: { inputTokens: 100, outputTokens: 10, cachedInputTokens: 30 } }),
        Turn.text("[summary]s[/summary]", { usage: { inputTokens: 50, outputTokens: 5 } }),
        Turn.text("A title", { usage: { inputTokens: 20, outputTokens: 2 } })
      ], (backend) =>
        Effect.gen(function*() {
          const conv = yield* backend.createConversation(settings)
          const other = yield* backend.createConversation(settings)
          const sent = yield* Effect.fork(collect(backend.send(conv.id, input(user("q1")))))
          yield* awaitSleeps()
          yield* TestClock.adjust(250)
          yield* Fiber.join(sent)
          yield* collect(backend.compact(conv.id, "manual"))
          yield* backend.generateTitle(conv.id)
          const report = yield* backend.usage()
          const totals = { requests: 4, input_tokens: 177, output_tokens: 18, cache_read_tokens: 30, cache_write_tokens: 0 }
          assert.deepStrictEqual(report.total, totals)
          assert.deepStrictEqual(report.conversations, [{ id: conv.id, title: "A title", model: "unknown", ...totals }])
          assert.deepStrictEqual((yield* backend.usage({ conversationId: other.id })).total.requests, 0)
          assert.deepStrictEqual((yield* backend.usage({ since: 1 })).total.requests, 3, "the failed attempt was at 0 ms, the rest after the wait")
        })))

    it.effect("steer with no task running is refused (409 no_task), holds nothing, and says to send a prompt instead", () =>
      withBackend([Turn.text("one")], (backend) =>
        Effect.gen(function*() {
          const conv = yield* backend.createConversation(settings)
          const fresh = yield* Effect.flip(backend.steer(conv.id, "use tabs"))
          assert.strictEqual(fresh._tag, "NoTaskRunning")
          assert.strictEqual(fresh._tag === "NoTaskRunning" && fresh.conversationId, conv.id)
          assert.match(fresh.message, /no task is running[\s\S]*send the text as a prompt instead/)
          yield* collect(backend.send(conv.id, input(user("q1"))))
          assert.strictEqual((yield* Effect.flip(backend.steer(conv.id, "too late")))._tag, "NoTaskRunning", "the task ended with an answer")
          assert.deepStrictEqual(yield* backend.heldSteering(conv.id), [], "nothing was kept for a later task")
          assert.strictEqual((yield* Effect.flip(backend.steer(conv.id, "")))._tag, "InvalidInput")
          assert.strictEqual((yield* Effect.flip(backend.steer("conv-nope" as typeof conv.id, "x")))._tag, "NotFound")
        })))

    it.effect("steer between two runs of a task (all results in, next run not sent) is held and drained into that run (and its stream)", () =>
      withBackend([Turn.toolCalls([{ id: "c1", name: "Read", args: { file_path: "a" } }]), Turn.text("done")], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          yield* collect(backend.send(conv.id, input(user("q1"))))
          const result = toolResult("c1", "A")
          yield* backend.submitResult(conv.id, result)
          assert.deepStrictEqual(yield* backend.pendingApprovals(conv.id), [])
          yield* backend.steer(conv.id, "use tabs")
          const steering = "[user_steering]\nuse tabs\n[/user_steering]"
          // The client's next run carries the results again, as a Session does.
          const chunks = yield* collect(backend.send(conv.id, input(result)))
          const [, request] = yield* script.requests
          assert.deepStrictEqual(request!.history.map((m) => m.type), ["user_message", "tool_call", "tool_return", "user_message"])
          assert.deepStrictEqual(request!.history.flatMap((m) => (m.type === "user_message" ? [m.content] : [])), ["q1", steering])
          assert.deepStrictEqual(chunks.flatMap((c) => (c.type === "user_message" ? [c.content] : [])), [steering], "the run streams what it drained")
          assert.include((yield* backend.history(conv.id)).map((h) => ("content" in h.item ? h.item.content : "")), steering, "recorded like any prompt")
          assert.deepStrictEqual(yield* backend.takeSteering(conv.id), [])
          assert.strictEqual((yield* Effect.flip(backend.steer(conv.id, "later")))._tag, "NoTaskRunning", "the task has ended")
        })))

    it.effect("steer while calls wait for results, or during a run's reconnect wait, is held; takeSteering takes what no request took", () =>
      withBackend([
        Turn.toolCalls([{ id: "c1", name: "Read", args: { file_path: "a" } }]),
        Turn.fail(timeout, { text: "partial" }),
        Turn.text("done")
      ], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          yield* collect(backend.send(conv.id, input(user("q1"))))
          yield* backend.steer(conv.id, "not this")
          assert.deepStrictEqual((yield* backend.takeSteering(conv.id)).map((m) => m.content), ["[user_steering]\nnot this\n[/user_steering]"])
          assert.deepStrictEqual(yield* backend.takeSteering(conv.id), [])
          // The next run's first attempt times out: the run is active while it waits to reconnect.
          const sent = yield* Effect.fork(collect(backend.send(conv.id, input(toolResult("c1", "A")))))
          // The reconnect's own wait (250 ms), not any sleep: an idle actor's passivation timer sleeps too.
          yield* eventually(Effect.map(TestClock.sleeps(), (wakes) => Array.from(wakes).includes(250)), "the run waits to reconnect")
          yield* backend.steer(conv.id, "mind the tests")
          yield* TestClock.adjust(250)
          yield* Fiber.join(sent)
          const said = (yield* script.requests)[2]!.history.flatMap((m) => (m.type === "user_message" ? [m.content] : []))
          assert.deepStrictEqual(said.at(-1), "[user_steering]\nmind the tests\n[/user_steering]", "the reconnect's request carries it")
        })))

    it.effect("an interrupted task (its calls closed by the carry-over) refuses steering like an ended one", () =>
      withBackend([Turn.toolCalls([{ id: "c1", name: "Read", args: { file_path: "a" } }])], (backend) =>
        Effect.gen(function*() {
          const conv = yield* backend.createConversation(settings)
          yield* collect(backend.send(conv.id, input(user("q1"))))
          yield* backend.cancel(conv.id, { results: [toolResult("c1", "A")], abort: true })
          assert.deepStrictEqual(yield* backend.pendingApprovals(conv.id), [])
          assert.strictEqual((yield* Effect.flip(backend.steer(conv.id, "x")))._tag, "NoTaskRunning")
        })))

    it.effect("held steering sent as a task's next input is recorded once and taken off the queue by that send", () =>
      withBackend([Turn.toolCalls([{ id: "c1", name: "Read", args: { file_path: "a" } }]), Turn.text("two")], (backend) =>
        Effect.gen(function*() {
          const script = yield* ProviderScript
          const conv = yield* backend.createConversation(settings)
          yield* collect(backend.send(conv.id, input(user("q1"))))
          yield* backend.submitResult(conv.id, toolResult("c1", "A"))
          yield* backend.steer(conv.id, "and the docs")
          const held = yield* backend.heldSteering(conv.id)
          assert.deepStrictEqual(held.map((m) => m.content), ["[user_steering]\nand the docs\n[/user_steering]"])
          assert.deepStrictEqual(yield* backend.heldSteering(conv.id), held, "reading it takes nothing")
          // The client continues its task with it, as a Session does when a run ends while steering waits.
          yield* collect(backend.send(conv.id, { messages: held }))
          assert.deepStrictEqual(yield* backend.heldSteering(conv.id), [])
          const [, second] = yield* script.requests
          const said = second!.history.flatMap((m) => (m.type === "user_message" ? [m.content] : []))
          assert.deepStrictEqual(said.filter((c) => c.includes("and the docs")).length, 1, "in the request once, not again by the backend's own drain")
        })))

    it.effect("history and backfill are chronological", () =>
      withBackend([Turn.text("one"), Turn.text("two")], (backend) =>
        Effect.gen(function*() {
          const conv = yield* backend.createConversation(settings)
          yield* collect(backend.send(conv.id, input(user("q1"))))
          yield* collect(backend.send(conv.id, input(user("q2"))))
          const messages = (yield* backend.backfill(conv.id)).map((h) => h.item).flatMap((m) => ("content" in m ? [m.content] : []))
          assert.deepStrictEqual(messages, ["q1", "one", "q2", "two"])
          const all = yield* backend.history(conv.id)
          const older = yield* backend.history(conv.id, { before: all.at(-1)!.position, limit: 2 })
          assert.deepStrictEqual(older.map((h) => h.position), [all.at(-3)!.position, all.at(-2)!.position])
        })))
  })
