import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Stream, TestClock } from "effect"
import type { Chunk } from "../../src/domain/Events.js"
import type { ConversationSettingsInput } from "../../src/domain/Conversation.js"
import { ProviderContextOverflow, ProviderServerError } from "../../src/domain/ProviderError.js"
import { extract } from "../../src/domain/Tags.js"
import { open } from "../../src/programs/session/Session.js"
import { Backend } from "../../src/services/Backend.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { ProviderScript, type ScriptEntry, Turn } from "../../src/services/provider/Scripted.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { Gates, layerScriptedGated, sessionLayer } from "../support/sessionHarness.js"
import { awaitSleeps, collect, eventually, input, user } from "../support/testing.js"

const tools = [{ name: "Read", description: "read a file", parameters: { type: "object" } }]
const summary = (text: string) => Turn.text(`[summary]${text}[/summary]`)
const env = (script: ReadonlyArray<ScriptEntry>, gated: ReadonlyArray<number> = []) =>
  layerLocal().pipe(Layer.provideMerge(layerScriptedGated(script, gated)), Layer.provide(layerMemory))

const newConversation = (compaction: NonNullable<ConversationSettingsInput["compaction"]>) =>
  Effect.flatMap(Backend, (b) => b.createConversation({ system_prompt: "sys", tools, compaction }))

const ask = (id: Parameters<Backend["Type"]["send"]>[0], text: string) =>
  Effect.flatMap(Backend, (b) => collect(b.send(id, input(user(text)))))

const compactions = (chunks: ReadonlyArray<Chunk>) =>
  chunks.flatMap((c) => (c.type === "compaction_begin" ? [c.reason] : []))

const ended = (chunks: ReadonlyArray<Chunk>) =>
  chunks.flatMap((c) => (c.type === "compaction_end" ? [c.status] : []))

describe("Compaction triggers", () => {
  it.effect("context: fires before the request after the one whose usage reached maxContextLength, not earlier", () =>
    Effect.gen(function*() {
      const conv = yield* newConversation({ maxContextLength: 100 })
      assert.deepStrictEqual(compactions(yield* ask(conv.id, "one")), [])
      assert.deepStrictEqual(compactions(yield* ask(conv.id, "two")), [])
      const third = yield* ask(conv.id, "three")
      assert.deepStrictEqual(compactions(third), ["context"])
      assert.deepStrictEqual(ended(third), ["ok"])
      const requests = yield* (yield* ProviderScript).requests
      const next = requests[3]!.history
      assert.match(next[0]!.type === "user_message" ? next[0]!.content : "", /^\[context_summary\]\nearlier talk\n\[\/context_summary\]$/)
      assert.deepStrictEqual(next.slice(1).map((m) => (m.type === "user_message" ? m.content : m.type)), ["three"])
    }).pipe(Effect.provide(env([
      Turn.text("a", { usage: { totalTokens: 60 } }),
      Turn.text("b", { usage: { totalTokens: 100 } }),
      summary("earlier talk"),
      Turn.text("c")
    ]))))

  it.effect("turns: fires once the segment holds maxSessionTurns turns", () =>
    Effect.gen(function*() {
      const conv = yield* newConversation({ maxSessionTurns: 2 })
      assert.deepStrictEqual(compactions(yield* ask(conv.id, "one")), [])
      assert.deepStrictEqual(compactions(yield* ask(conv.id, "two")), [])
      assert.deepStrictEqual(compactions(yield* ask(conv.id, "three")), ["turns"])
      assert.deepStrictEqual(compactions(yield* ask(conv.id, "four")), [])
    }).pipe(Effect.provide(env([Turn.text("a"), Turn.text("b"), summary("s"), Turn.text("c"), Turn.text("d")]))))

  it.effect("pre-flight: fires when the estimate of the next request is over window − reserve", () =>
    Effect.gen(function*() {
      // window 1000 → threshold 800; the last usage was 700, so 100 more tokens is exactly the limit
      const conv = yield* newConversation({ maxContextLength: 0, contextWindow: 1000 })
      yield* ask(conv.id, "one")
      assert.deepStrictEqual(compactions(yield* ask(conv.id, "x".repeat(400))), [])
      assert.deepStrictEqual(compactions(yield* ask(conv.id, "y".repeat(404))), ["preflight"])
    }).pipe(Effect.provide(env([
      Turn.text("a", { usage: { totalTokens: 700 } }),
      Turn.text("b", { usage: { totalTokens: 700 } }),
      summary("s"),
      Turn.text("c")
    ]))))

  it.effect("overflow: the request compacts, then retries and succeeds", () =>
    Effect.gen(function*() {
      const conv = yield* newConversation({ maxContextLength: 0 })
      yield* ask(conv.id, "one")
      const chunks = yield* ask(conv.id, "two")
      assert.deepStrictEqual(compactions(chunks), ["overflow"])
      const types = chunks.filter((c) => !c.type.endsWith("_delta")).map((c) => c.type === "request_end" ? `request_end:${c.status}` : c.type)
      assert.deepStrictEqual(types, [
        "request_begin", "request_end:retrying",
        "compaction_begin", "request_begin", "assistant_message", "token_usage", "request_end:ok", "compaction_end", "summary_message",
        "request_begin", "assistant_message", "token_usage", "request_end:ok", "stop_reason"
      ])
    }).pipe(Effect.provide(env([
      Turn.text("a"),
      Turn.fail(new ProviderContextOverflow({ message: "prompt is too long" })),
      summary("s"),
      Turn.text("fits now")
    ]))))
})

describe("Compaction (summarize)", () => {
  it.effect("success: a new segment; the next request starts with the summary; the compaction request keeps the tools and the prefix", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const conv = yield* newConversation({})
      yield* ask(conv.id, "one")
      const before = yield* backend.exportTrace(conv.id, 1)
      const chunks = yield* collect(backend.compact(conv.id, "manual"))
      assert.deepStrictEqual(ended(chunks), ["ok"])
      const end = chunks.find((c) => c.type === "compaction_end")
      assert.strictEqual(end?.type === "compaction_end" && end.segment, 2)
      yield* ask(conv.id, "two")
      const [normal, compaction, next] = yield* (yield* ProviderScript).requests
      assert.deepStrictEqual(compaction!.tools, normal!.tools)
      assert.strictEqual(compaction!.system, normal!.system)
      assert.deepStrictEqual(compaction!.history.slice(0, normal!.history.length), normal!.history)
      assert.strictEqual(next!.history[0]!.type === "user_message" && next!.history[0]!.content.startsWith("[context_summary]"), true)
      // one segment = one model context; the first file does not change
      assert.strictEqual(yield* backend.exportTrace(conv.id, 1), before)
      const second = yield* backend.exportTrace(conv.id, 2)
      assert.include(second, "\"compaction_end\"")
      assert.include(second, "\"summary_message\"")
      assert.notInclude(second, "[context_summary]")
      assert.strictEqual(yield* backend.compactability(conv.id), "ok")
    }).pipe(Effect.provide(env([Turn.text("a"), summary("what happened"), Turn.text("b")]))))

  it.effect("an invalid summary (a tool call, then empty) is asked again at once; the third is used", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const conv = yield* newConversation({})
      yield* ask(conv.id, "one")
      const chunks = yield* collect(backend.compact(conv.id, "manual"))
      assert.deepStrictEqual(ended(chunks), ["ok"])
      const ends = chunks.flatMap((c) => (c.type === "request_end" ? [[c.status, c.error?.tag]] : []))
      assert.deepStrictEqual(ends, [["retrying", "InvalidSummary"], ["retrying", "InvalidSummary"], ["ok", undefined]])
      const requests = yield* (yield* ProviderScript).requests
      const retry = requests[2]!.history
      const answered = retry.flatMap((m) => (m.type === "tool_return" ? [[m.tool_call_id, m.status]] : []))
      assert.deepStrictEqual(answered, [["stray", "error"]], "the stray call is answered so the pair stays intact")
      const summaryMessage = chunks.find((c) => c.type === "summary_message")
      assert.strictEqual(summaryMessage?.type === "summary_message" && summaryMessage.content, "third time")
    }).pipe(Effect.provide(env([
      Turn.text("a"),
      Turn.toolCalls([{ id: "stray", name: "Read", args: { file_path: "x" } }]),
      Turn.text(""),
      summary("third time")
    ]))))

  it.effect("five invalid summaries: compaction fails and the context stays exactly as it was", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const conv = yield* newConversation({})
      yield* ask(conv.id, "one")
      const history = yield* backend.history(conv.id)
      const chunks = yield* collect(backend.compact(conv.id, "manual"))
      assert.deepStrictEqual(ended(chunks), ["failed"])
      const end = chunks.find((c) => c.type === "compaction_end")!
      assert.strictEqual(end.type === "compaction_end" && end.error?.tag, "InvalidSummary")
      yield* ask(conv.id, "two")
      const next = (yield* (yield* ProviderScript).requests)[6]!.history
      assert.deepStrictEqual(next.map((m) => (m.type === "user_message" || m.type === "assistant_message" ? m.content : m.type)), ["one", "a", "two"])
      const after = (yield* backend.history(conv.id)).filter((h) => h.position <= history.at(-1)!.position)
      assert.deepStrictEqual(after, history)
      assert.isTrue((yield* backend.history(conv.id)).every((h) => h.segment === 1))
    }).pipe(Effect.provide(env([Turn.text("a"), ...Array.from({ length: 5 }, () => Turn.text("")), Turn.text("b")]))))

  it.effect("discard drops the old context; sliding_window keeps the recent turns verbatim", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const dropped = yield* newConversation({ mode: "discard" })
      yield* ask(dropped.id, "old")
      yield* collect(backend.compact(dropped.id, "manual"))
      yield* ask(dropped.id, "new")
      const sliding = yield* newConversation({ mode: "sliding_window" })
      for (const q of ["q1", "q2", "q3", "q4", "q5"]) yield* ask(sliding.id, q)
      yield* collect(backend.compact(sliding.id, "manual"))
      yield* ask(sliding.id, "q6")
      const requests = yield* (yield* ProviderScript).requests
      assert.deepStrictEqual(requests[1]!.history.map((m) => (m.type === "user_message" ? m.content : m.type)), ["new"])
      const summarized = requests[7]!.history.flatMap((m) => (m.type === "user_message" ? [m.content] : []))
      assert.deepStrictEqual(summarized.slice(0, -1), ["q1", "q2"], "only the evicted part is summarized")
      const next = requests[8]!.history.flatMap((m) => (m.type === "user_message" ? [m.content.split("\n")[0]] : []))
      assert.deepStrictEqual(next, ["[context_summary]", "q3", "q4", "q5", "q6"])
    }).pipe(Effect.provide(env([
      Turn.text("a"), Turn.text("b"),
      Turn.text("1"), Turn.text("2"), Turn.text("3"), Turn.text("4"), Turn.text("5"), summary("q1 and q2"), Turn.text("6")
    ]))))
})

describe("Compaction: the sliding window's fallback", () => {
  it.effect("a sliding window with no place to cut (one short turn) falls back to summarizing everything older", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const sliding = yield* newConversation({ mode: "sliding_window" })
      yield* ask(sliding.id, "q1")
      const chunks = yield* collect(backend.compact(sliding.id, "manual"))
      assert.deepStrictEqual(ended(chunks), ["ok"], "planning the window failed, and the compaction still succeeded")
      yield* ask(sliding.id, "q2")
      const requests = yield* (yield* ProviderScript).requests
      const summarized = requests[1]!.history.flatMap((m) => (m.type === "user_message" ? [m.content] : []))
      assert.deepStrictEqual(summarized.slice(0, -1), ["q1"], "the whole older context went to the summary request")
      const next = requests[2]!.history.map((m) => (m.type === "user_message" ? m.content.split("\n")[0] : m.type))
      assert.deepStrictEqual(next, ["[context_summary]", "q2"], "nothing was kept verbatim")
    }).pipe(Effect.provide(env([Turn.text("a"), summary("asked q1"), Turn.text("b")]))))
})

describe("Compaction budgets and tags", () => {
  it.effect("transport failures use the compaction budget: 3 reconnects, then the compaction fails and nothing changes", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const conv = yield* newConversation({})
      yield* ask(conv.id, "one")
      const fiber = yield* Effect.fork(collect(backend.compact(conv.id, "manual")))
      for (const wait of [250, 500, 1000]) {
        yield* awaitSleeps()
        yield* TestClock.adjust(wait)
      }
      const chunks = yield* Fiber.join(fiber)
      const ends = chunks.flatMap((c) => (c.type === "request_end" ? [c.status] : []))
      assert.deepStrictEqual(ends, ["retrying", "retrying", "retrying", "failed"])
      assert.deepStrictEqual(ended(chunks), ["failed"])
      assert.strictEqual((yield* backend.history(conv.id)).at(-1)!.segment, 1)
    }).pipe(Effect.provide(env([Turn.text("a"), ...Array.from({ length: 4 }, () => Turn.fail(new ProviderServerError({ status: 503, message: "down" })))]))))

  it.effect("the older <summary> form is still read", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const conv = yield* newConversation({})
      yield* ask(conv.id, "one")
      const chunks = yield* collect(backend.compact(conv.id, "manual"))
      const made = chunks.find((c) => c.type === "summary_message")
      assert.strictEqual(made?.type === "summary_message" && made.content, "legacy form")
      assert.strictEqual(extract("summary", "[summary] new [/summary] <summary>old</summary>"), "new")
      assert.strictEqual(extract("context_summary", "<context_summary>\nx\n</context_summary>"), "x")
    }).pipe(Effect.provide(env([Turn.text("a"), Turn.text("Here it is: <summary>legacy form</summary>")]))))
})

describe("compactability and titles", () => {
  it.effect("empty → ok → just_compacted → ok; busy (not unsupported) while a run is active", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const gates = yield* Gates
      const conv = yield* newConversation({})
      assert.strictEqual(yield* backend.compactability(conv.id), "empty")
      yield* ask(conv.id, "one")
      assert.strictEqual(yield* backend.compactability(conv.id), "ok")
      yield* collect(backend.compact(conv.id, "manual"))
      assert.strictEqual(yield* backend.compactability(conv.id), "just_compacted")
      const running = yield* Effect.fork(ask(conv.id, "two"))
      yield* eventually(Effect.map(backend.compactability(conv.id), (c) => c === "busy"), "the run is active")
      yield* gates.release(3)
      yield* Fiber.join(running)
      assert.strictEqual(yield* backend.compactability(conv.id), "ok")
    }).pipe(Effect.provide(env([Turn.text("a"), summary("s"), Turn.text("b")], [3]))))

  it.effect("generateTitle is a one-shot call: no tools, no system prompt, nothing added to the history", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const conv = yield* newConversation({})
      yield* ask(conv.id, "please refactor the parser")
      const before = yield* backend.history(conv.id)
      assert.strictEqual(yield* backend.generateTitle(conv.id), "Refactor the parser")
      const request = (yield* (yield* ProviderScript).requests)[1]!
      assert.deepStrictEqual([request.tools, request.system], [[], ""])
      assert.include(request.history[0]!.type === "user_message" ? request.history[0]!.content : "", "please refactor the parser")
      assert.deepStrictEqual(yield* backend.history(conv.id), before)
      assert.strictEqual((yield* backend.getConversation(conv.id)).title, "Refactor the parser")
    }).pipe(Effect.provide(env([Turn.text("ok"), Turn.text("\"Refactor the parser.\"")]))))
})

describe("the title", () => {
  it.effect("is made from the conversation's opening messages, not its newest items", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const conv = yield* newConversation({})
      yield* ask(conv.id, "the opening question about parsers")
      // Enough later turns that the newest 50 items no longer hold the opening message.
      for (let i = 0; i < 12; i++) yield* ask(conv.id, `later message ${i}`)
      assert.isAbove((yield* backend.history(conv.id, { limit: 1000 })).length, 60)
      yield* backend.generateTitle(conv.id)
      const requests = yield* (yield* ProviderScript).requests
      const prompt = requests.at(-1)!.history[0]!
      assert.include(prompt.type === "user_message" ? prompt.content : "", "the opening question about parsers")
      assert.notInclude(prompt.type === "user_message" ? prompt.content : "", "later message 11")
    }).pipe(Effect.provide(env([...Array.from({ length: 13 }, () => Turn.text("ok")), Turn.text("Parsers")]))))
})

describe("Compaction inside a task", () => {
  it.scopedLive("steering sent during a compaction is delivered after it", () =>
    Effect.gen(function*() {
      const gates = yield* Gates
      const backend = yield* Backend
      const session = yield* open({ settings: { system_prompt: "sys", compaction: { maxSessionTurns: 2 } } })
      yield* collect(session.run("one"))
      yield* collect(session.run("two"))
      const seen: Array<string> = []
      const fiber = yield* Effect.fork(Stream.runForEach(session.run("three"), (e) => Effect.sync(() => seen.push(e.type))))
      yield* eventually(Effect.sync(() => seen.includes("compaction_begin")), "the compaction started")
      assert.isTrue(yield* session.steer("mind the tests"))
      yield* gates.release(3)
      yield* Fiber.join(fiber)
      assert.isTrue(seen.indexOf("compaction_end") < seen.lastIndexOf("user_message"))
      const requests = yield* (yield* ProviderScript).requests
      const last = requests.at(-1)!.history.flatMap((m) => (m.type === "user_message" ? [m.content.split("\n")[0]] : []))
      assert.deepStrictEqual(last, ["[context_summary]", "three", "[user_steering]"])
      assert.strictEqual(yield* backend.compactability(session.conversationId), "ok")
    }).pipe(Effect.provide(sessionLayer("memory", [Turn.text("a"), Turn.text("b"), summary("s"), Turn.text("c"), Turn.text("d")], [3]))))
})
