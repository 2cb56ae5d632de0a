import { assert, describe, it } from "@effect/vitest"
import { Cause, Chunk, Effect, Exit, Fiber, Option, Stream, TestClock } from "effect"
import { ProviderServerError, ProviderTimeout } from "../../src/domain/ProviderError.js"
import { Provider } from "../../src/services/Provider.js"
import { layerScripted, ProviderScript, Turn } from "../../src/services/provider/Scripted.js"
import { request, run, user } from "../support/ProviderHarness.js"

const streamOf = (req = request()) => Effect.flatMap(Provider, (p) => run(p.stream(req)))

describe("Turn builders", () => {
  it("text: one delta (or the given split), default usage, stop", () => {
    assert.deepStrictEqual(Turn.text("hi").events, [
      { _tag: "TextDelta", text: "hi" },
      { _tag: "Usage", inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, totalTokens: 15 },
      { _tag: "Finish", reason: "stop" }
    ])
    assert.deepStrictEqual(Turn.text(["h", "i"], { usage: null }).events.map((e) => e._tag), ["TextDelta", "TextDelta", "Finish"])
  })

  it("toolCalls: Start, Delta, End per call (args serialized, strings raw), then tool_calls", () => {
    const turn = Turn.toolCalls([{ id: "a", name: "Read", args: { path: "x" } }, { id: "b", name: "Bad", args: "{oops" }], {
      text: "ok",
      reasoning: { text: "r", signature: "s" },
      usage: { inputTokens: 100 }
    })
    assert.deepStrictEqual(turn.events, [
      { _tag: "ReasoningDelta", text: "r" },
      { _tag: "ReasoningSignature", signature: "s", provider: "anthropic" },
      { _tag: "TextDelta", text: "ok" },
      { _tag: "ToolCallStart", id: "a", name: "Read" },
      { _tag: "ToolCallDelta", id: "a", argumentsDelta: "{\"path\":\"x\"}" },
      { _tag: "ToolCallEnd", id: "a", name: "Read", arguments: "{\"path\":\"x\"}" },
      { _tag: "ToolCallStart", id: "b", name: "Bad" },
      { _tag: "ToolCallDelta", id: "b", argumentsDelta: "{oops" },
      { _tag: "ToolCallEnd", id: "b", name: "Bad", arguments: "{oops" },
      { _tag: "Usage", inputTokens: 100, outputTokens: 5, cachedInputTokens: 0, totalTokens: 105 },
      { _tag: "Finish", reason: "tool_calls" }
    ])
  })

  it("cut keeps the first n events then fails", () => {
    const error = new ProviderServerError({ status: 500, message: "x" })
    const cut = Turn.cut(Turn.toolCalls([{ id: "a", name: "Read" }]), 2, error)
    assert.deepStrictEqual(cut.events.map((e) => e._tag), ["ToolCallStart", "ToolCallDelta"])
    assert.deepStrictEqual(cut.end, { _tag: "Fail", error })
  })
})

describe("layerScripted", () => {
  it.effect("each call consumes the next turn; requests are recorded in order", () =>
    Effect.gen(function*() {
      const first = yield* streamOf(request({ history: [user("one")] }))
      const second = yield* streamOf(request({ history: [user("two")] }))
      assert.deepStrictEqual(first.events[0], { _tag: "TextDelta", text: "first" })
      assert.deepStrictEqual(second.events[0], { _tag: "TextDelta", text: "second" })
      const script = yield* ProviderScript
      const requests = yield* script.requests
      assert.deepStrictEqual(requests.map((r) => r.history[0]?.type === "user_message" && r.history[0].content), ["one", "two"])
      assert.strictEqual(yield* script.remaining, 0)
    }).pipe(Effect.provide(layerScripted([Turn.text("first"), Turn.text("second")]))))

  it.effect("partial output then a failure", () =>
    Effect.gen(function*() {
      const { events, error } = yield* streamOf()
      assert.deepStrictEqual(events, [{ _tag: "TextDelta", text: "par" }])
      assert.strictEqual(error?._tag, "ProviderTimeout")
    }).pipe(Effect.provide(layerScripted([
      Turn.fail(new ProviderTimeout({ phase: "stall", afterMs: 1, message: "stalled" }), { text: "par" })
    ]))))

  it.effect("a stalled turn emits its partial output and never completes", () =>
    Effect.gen(function*() {
      const provider = yield* Provider
      const fiber = yield* provider.stream(request()).pipe(Stream.runCollect, Effect.fork)
      const script = yield* ProviderScript
      yield* script.awaitRequests(1)
      yield* TestClock.adjust("1 hour")
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
    }).pipe(Effect.provide(layerScripted([Turn.stall({ text: "thinking…" })]))))

  it.effect("a function entry sees the request and the call index", () =>
    Effect.gen(function*() {
      const { events } = yield* streamOf(request({ history: [user("echo me")] }))
      assert.deepStrictEqual(events[0], { _tag: "TextDelta", text: "#1: echo me" })
    }).pipe(Effect.provide(layerScripted([
      (req, index) => Turn.text(`#${index}: ${req.history[0]?.type === "user_message" ? req.history[0].content : ""}`)
    ]))))

  it.effect("push appends turns at runtime", () =>
    Effect.gen(function*() {
      const script = yield* ProviderScript
      yield* script.push(Turn.text("late"))
      assert.strictEqual(yield* script.remaining, 1)
      const { events } = yield* streamOf()
      assert.deepStrictEqual(events[0], { _tag: "TextDelta", text: "late" })
    }).pipe(Effect.provide(layerScripted([]))))

  it.effect("running out of script is a defect that names the call", () =>
    Effect.gen(function*() {
      yield* streamOf()
      const provider = yield* Provider
      const exit = yield* provider.stream(request({ history: [user("one too many")] })).pipe(Stream.runCollect, Effect.exit)
      assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause))
      const defect = Exit.isFailure(exit) ? Chunk.unsafeHead(Cause.defects(exit.cause)) : undefined
      assert.include(String(defect), "no scripted turn left for call #2")
      assert.include(String(defect), "one too many")
    }).pipe(Effect.provide(layerScripted([Turn.text("only")]))))

  it.effect("events arrive one per chunk, so consumers see arrival order", () =>
    Effect.gen(function*() {
      const provider = yield* Provider
      const chunks = yield* provider.stream(request()).pipe(Stream.chunks, Stream.runCollect)
      assert.isTrue(Chunk.every(chunks, (c) => c.length === 1))
      assert.strictEqual(chunks.length, 3)
    }).pipe(Effect.provide(layerScripted([Turn.text("x")]))))
})
