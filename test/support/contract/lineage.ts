import { assert, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { ToolCallId } from "../../../src/domain/Ids.js"
import type { Backend } from "../../../src/services/Backend.js"
import { ProviderScript, type ScriptEntry, Turn } from "../../../src/services/provider/Scripted.js"
import { collect, input, toolResult, user } from "../testing.js"

type WithBackend = <A, E>(
  script: ReadonlyArray<ScriptEntry>,
  body: (backend: Backend["Type"]) => Effect.Effect<A, E, Backend | ProviderScript>
) => Effect.Effect<A, unknown>

const settings = { system_prompt: "be brief", tools: [{ name: "Read", description: "read", parameters: { type: "object" } }] }

/** What the model sees of a message: everything but the run it was streamed in. */
const modelView = (messages: ReadonlyArray<object>) =>
  messages.map((m) => Object.fromEntries(Object.entries(m).filter(([key]) => key !== "run_id" && key !== "seq")))

/** `parent` (a subagent's conversation, one per Task call) and `fork` (a copy of the model context up to a cut). */
export const lineageContract = (withBackend: WithBackend) => {
  it.effect("a child conversation records its parent link; the same link again returns the same conversation", () =>
    withBackend([], (backend) =>
      Effect.gen(function*() {
        const parent = yield* backend.createConversation(settings)
        const link = { conversation_id: parent.id, tool_call_id: ToolCallId.make("t1") }
        const child = yield* backend.createConversation(settings, { title: "look around", parent: link })
        assert.deepStrictEqual(child.parent, link)
        assert.strictEqual(child.title, "look around")
        const again = yield* backend.createConversation(settings, { parent: link })
        assert.strictEqual(again.id, child.id)
        assert.deepStrictEqual((yield* backend.getConversation(child.id)).parent, link)
        const other = yield* backend.createConversation(settings, { parent: { ...link, tool_call_id: ToolCallId.make("t2") } })
        assert.notStrictEqual(other.id, child.id)
        assert.strictEqual(parent.parent, undefined)
        const children = (yield* backend.listConversations({ parent: parent.id })).items.map((c) => c.id)
        assert.deepStrictEqual(children, [other.id, child.id], "a conversation's subagents, newest first")
        const roots = (yield* backend.listConversations({ roots: true })).items.map((c) => c.id)
        assert.deepStrictEqual(roots, [parent.id], "subagents left out")
        assert.strictEqual((yield* backend.listConversations()).items.length, 3)
        const link3 = { ...link, tool_call_id: ToolCallId.make("t3") }
        const raced = yield* Effect.all(Array.from({ length: 5 }, () => backend.createConversation(settings, { parent: link3 })), { concurrency: "unbounded" })
        assert.strictEqual(new Set(raced.map((c) => c.id)).size, 1, "creations racing on one link make one conversation")
      })))

  it.effect("fork at the end: its first request is the source's context, its trace starts empty, the source is unchanged", () =>
    withBackend([
      Turn.toolCalls([{ id: "c1", name: "Read", args: { file_path: "a" } }]),
      Turn.text("A says hi"),
      Turn.text("forked answer")
    ], (backend) =>
      Effect.gen(function*() {
        const script = yield* ProviderScript
        const source = yield* backend.createConversation(settings, { title: "src" })
        yield* collect(backend.send(source.id, input(user("read a"))))
        yield* collect(backend.send(source.id, input(toolResult("c1", "hi"))))
        const before = yield* backend.history(source.id, { limit: 1000 })
        const last = before.at(-1)!.position
        const fork = yield* backend.fork(source.id)
        assert.deepStrictEqual(fork.forked_from, { conversation_id: source.id, at: last })
        assert.deepStrictEqual(fork.settings, source.settings)
        assert.strictEqual(yield* backend.exportTrace(fork.id, 1), "")
        yield* collect(backend.send(fork.id, input(user("and now?"))))
        const requests = yield* script.requests
        const sourceContext = [...requests[1]!.history, { type: "assistant_message", content: "A says hi" }]
        assert.deepStrictEqual(modelView(requests[2]!.history.slice(0, -1)), modelView(sourceContext))
        assert.deepStrictEqual(requests[2]!.system, requests[1]!.system)
        assert.deepStrictEqual(yield* backend.history(source.id, { limit: 1000 }), before)
      })))

  it.effect("fork at a position: the copy ends there; a cut between a call and its result is refused, nothing made", () =>
    withBackend([Turn.toolCalls([{ id: "c1", name: "Read", args: { file_path: "a" } }]), Turn.text("done"), Turn.text("from the cut")], (backend) =>
      Effect.gen(function*() {
        const script = yield* ProviderScript
        const source = yield* backend.createConversation(settings)
        yield* collect(backend.send(source.id, input(user("read a"))))
        yield* collect(backend.send(source.id, input(toolResult("c1", "A"))))
        const items = yield* backend.history(source.id, { limit: 1000 })
        const call = items.find((s) => s.item.type === "tool_call")!
        const result = items.find((s) => s.item.type === "tool_return")!
        const listed = (yield* backend.listConversations({ limit: 500 })).items.length
        const refused = yield* Effect.either(backend.fork(source.id, { at: call.position }))
        assert.isTrue(Either.isLeft(refused))
        if (Either.isLeft(refused)) {
          assert.strictEqual(refused.left._tag, "InvalidInput")
          assert.include(refused.left.message, "c1")
          assert.include(refused.left.message, `position ${call.position}`)
        }
        const beyond = yield* Effect.either(backend.fork(source.id, { at: items.at(-1)!.position + 1 }))
        assert.isTrue(Either.isLeft(beyond) && beyond.left._tag === "InvalidInput")
        assert.strictEqual((yield* backend.listConversations({ limit: 500 })).items.length, listed)
        const fork = yield* backend.fork(source.id, { at: result.position })
        assert.deepStrictEqual(fork.forked_from, { conversation_id: source.id, at: result.position })
        yield* collect(backend.send(fork.id, input(user("go on"))))
        const history = (yield* script.requests)[2]!.history
        assert.deepStrictEqual(history.map((m) => m.type), ["user_message", "tool_call", "tool_return", "user_message"])
        assert.deepStrictEqual(yield* backend.pendingApprovals(fork.id), [])
      })))
}
