import { assert, it } from "@effect/vitest"
import { Effect, Either, Fiber, Stream, TestClock } from "effect"
import type { ApprovalDecision, Chunk } from "../../../src/domain/Events.js"
import { ConversationId, ToolCallId } from "../../../src/domain/Ids.js"
import * as PE from "../../../src/domain/ProviderError.js"
import type { Backend } from "../../../src/services/Backend.js"
import { ProviderScript, type ScriptEntry, Turn } from "../../../src/services/provider/Scripted.js"
import { awaitSleeps, collect, eventually, input, toolResult, user } from "../testing.js"

type WithBackend = <A, E>(
  script: ReadonlyArray<ScriptEntry>,
  body: (backend: Backend["Type"]) => Effect.Effect<A, E, Backend | ProviderScript>
) => Effect.Effect<A, unknown>

const settings = { system_prompt: "be brief", tools: [{ name: "Read", description: "read", parameters: { type: "object" } }] }

const three = Turn.toolCalls([
  { id: "c1", name: "Read", args: { file_path: "a" } },
  { id: "c2", name: "Read", args: { file_path: "b" } },
  { id: "c3", name: "Read", args: { file_path: "c" } }
])

const ids = (calls: ReadonlyArray<{ readonly tool_call_id: string }>) => calls.map((c) => String(c.tool_call_id))

const returnsSeen = (history: ReadonlyArray<{ readonly type: string }>) =>
  history.flatMap((m) => (m.type === "tool_return" && "tool_call_id" in m && "content" in m ? [`${String(m.tool_call_id)}=${String(m.content)}`] : []))

const allow = (id: string): ApprovalDecision => ({ type: "approval_decision", tool_call_id: ToolCallId.make(id), decision: "allow", source: "rule" })

/** `Backend.submitResult`: every result committed as its tool finishes, idempotent, never lost, never twice. */
export const resultsContract = (withBackend: WithBackend) => {
  it.effect("results committed as they finish leave pendingApprovals at once; the model sees them in call order, once", () =>
    withBackend([three, Turn.text("done")], (backend) =>
      Effect.gen(function*() {
        const script = yield* ProviderScript
        const conv = yield* backend.createConversation(settings)
        yield* collect(backend.send(conv.id, input(user("read all"))))
        const r1 = toolResult("c1", "A")
        const r2 = toolResult("c2", "B")
        const r3 = toolResult("c3", "C")
        yield* backend.submitResult(conv.id, r3, { decision: allow("c3") })
        assert.deepStrictEqual(ids(yield* backend.pendingApprovals(conv.id)), ["c1", "c2"])
        yield* backend.submitResult(conv.id, r1)
        assert.deepStrictEqual(ids(yield* backend.pendingApprovals(conv.id)), ["c2"])
        yield* backend.submitResult(conv.id, r2)
        assert.deepStrictEqual(yield* backend.pendingApprovals(conv.id), [])
        // The client sends the results again with the next input: recognised by otid, added once.
        yield* collect(backend.send(conv.id, input(r2, r1, r3, user("go on"))))
        const history = (yield* script.requests)[1]!.history
        assert.deepStrictEqual(returnsSeen(history), ["c1=A", "c2=B", "c3=C"])
        assert.deepStrictEqual(history.map((m) => m.type).slice(-4), ["tool_return", "tool_return", "tool_return", "user_message"])
        const trace = yield* backend.history(conv.id)
        assert.isTrue(trace.some((h) => h.item.type === "approval_decision" && h.item.tool_call_id === "c3"), "the decision is recorded with its result")
      })))

  it.effect("all results committed, then a crash: the next input needs none of them (user text alone continues)", () =>
    withBackend([three, Turn.text("done")], (backend) =>
      Effect.gen(function*() {
        const script = yield* ProviderScript
        const conv = yield* backend.createConversation(settings)
        yield* collect(backend.send(conv.id, input(user("read all"))))
        for (const [id, text] of [["c2", "B"], ["c1", "A"], ["c3", "C"]] as const) yield* backend.submitResult(conv.id, toolResult(id, text))
        const next = yield* collect(backend.send(conv.id, input(user("continue"))))
        assert.isTrue(next.some((c) => c.type === "assistant_message" && c.content === "done"))
        assert.deepStrictEqual(returnsSeen((yield* script.requests)[1]!.history), ["c1=A", "c2=B", "c3=C"])
      })))

  it.effect("the same result again is a no-op; another result for an answered call is ToolCallAnswered; unknown calls and conversations are refused", () =>
    withBackend([three], (backend) =>
      Effect.gen(function*() {
        const conv = yield* backend.createConversation(settings)
        yield* collect(backend.send(conv.id, input(user("read all"))))
        const r1 = toolResult("c1", "A")
        yield* backend.submitResult(conv.id, r1)
        yield* backend.submitResult(conv.id, r1)
        const before = (yield* backend.history(conv.id)).length
        yield* backend.submitResult(conv.id, r1)
        assert.strictEqual((yield* backend.history(conv.id)).length, before, "a repeated result writes nothing")
        const other = yield* Effect.flip(backend.submitResult(conv.id, toolResult("c1", "something else")))
        assert.strictEqual(other._tag, "ToolCallAnswered")
        assert.strictEqual(other._tag === "ToolCallAnswered" && String(other.toolCallId), "c1")
        const unknown = yield* Effect.flip(backend.submitResult(conv.id, toolResult("zz")))
        assert.deepStrictEqual(unknown._tag === "InvalidToolCallIds" && ids(unknown.unknown.map((u) => ({ tool_call_id: u }))), ["zz"])
        const nowhere = yield* Effect.flip(backend.submitResult(ConversationId.make("conv-nope"), toolResult("c1")))
        assert.strictEqual(nowhere._tag, "NotFound")
        // A send that answers c1 differently is refused the same way, and writes nothing.
        const conflicting = yield* Effect.either(collect(backend.send(conv.id, input(toolResult("c1", "other"), toolResult("c2"), toolResult("c3")))))
        assert.isTrue(Either.isLeft(conflicting) && conflicting.left._tag === "ToolCallAnswered")
        assert.deepStrictEqual(ids(yield* backend.pendingApprovals(conv.id)), ["c2", "c3"])
      })))

  it.effect("a result that finishes while its run still streams is held: not pending at the stop, in the context once", () =>
    withBackend([
      Turn.fail(new PE.ProviderServerError({ status: 503, message: "down" }), [
        { _tag: "ToolCallStart", id: "c1", name: "Read" },
        { _tag: "ToolCallDelta", id: "c1", argumentsDelta: "{}" },
        { _tag: "ToolCallEnd", id: "c1", name: "Read", arguments: "{}" }
      ]),
      Turn.toolCalls([{ id: "c2", name: "Read" }]),
      Turn.text("done")
    ], (backend) =>
      Effect.gen(function*() {
        const script = yield* ProviderScript
        const conv = yield* backend.createConversation(settings)
        const seen: Array<Chunk> = []
        const run = yield* Effect.fork(Stream.runForEach(backend.send(conv.id, input(user("go"))), (c) => Effect.sync(() => seen.push(c))))
        yield* eventually(Effect.sync(() => seen.some((c) => c.type === "tool_call")), "c1 streamed")
        // c1's tool finished during the reconnect wait, before the run has committed c1.
        const early = toolResult("c1", "early")
        yield* backend.submitResult(conv.id, early)
        yield* backend.submitResult(conv.id, early)
        yield* awaitSleeps()
        yield* TestClock.adjust(250)
        yield* Fiber.join(run)
        assert.deepStrictEqual(ids(yield* backend.pendingApprovals(conv.id)), ["c2"], "c1 has its result; only c2 waits")
        const second = yield* Effect.flip(backend.submitResult(conv.id, toolResult("c1", "late")))
        assert.strictEqual(second._tag, "ToolCallAnswered")
        yield* collect(backend.send(conv.id, input(toolResult("c2", "two"))))
        const history = (yield* script.requests)[2]!.history
        assert.deepStrictEqual(returnsSeen(history), ["c1=early", "c2=two"])
        assert.deepStrictEqual(yield* backend.pendingApprovals(conv.id), [])
      })))

  it.effect("two clients answering one call at once: exactly one result is committed", () =>
    withBackend([three], (backend) =>
      Effect.gen(function*() {
        const conv = yield* backend.createConversation(settings)
        yield* collect(backend.send(conv.id, input(user("read all"))))
        const mine = toolResult("c1", "mine")
        const theirs = toolResult("c1", "theirs")
        const outcomes = yield* Effect.all(
          [mine, theirs, mine].map((r) => Effect.either(backend.submitResult(conv.id, r))),
          { concurrency: "unbounded" }
        )
        const refused = outcomes.filter(Either.isLeft).map((o) => o.left._tag)
        assert.deepStrictEqual(refused, refused.length === 1 ? ["ToolCallAnswered"] : ["ToolCallAnswered", "ToolCallAnswered"])
        const returns = (yield* backend.history(conv.id)).filter((h) => h.item.type === "tool_return" && h.item.tool_call_id === "c1")
        assert.strictEqual(returns.length, 1, "one result, whoever won")
        assert.deepStrictEqual(ids(yield* backend.pendingApprovals(conv.id)), ["c2", "c3"])
      })))

  it.effect("an interrupt after some results were committed closes each call exactly once", () =>
    withBackend([three, Turn.text("ok")], (backend) =>
      Effect.gen(function*() {
        const script = yield* ProviderScript
        const conv = yield* backend.createConversation(settings)
        yield* collect(backend.send(conv.id, input(user("read all"))))
        const r2 = toolResult("c2", "B")
        yield* backend.submitResult(conv.id, r2)
        // The carry-over repeats the committed result, and has a real result for c1: c3 gets the placeholder.
        yield* backend.cancel(conv.id, { results: [toolResult("c1", "A"), r2], abort: true })
        assert.deepStrictEqual(yield* backend.pendingApprovals(conv.id), [])
        yield* collect(backend.send(conv.id, input(user("next"))))
        const history = (yield* script.requests)[1]!.history
        assert.deepStrictEqual(returnsSeen(history), ["c1=A", "c2=B", "c3=[interrupted: tool aborted by user]"])
      })))
}
