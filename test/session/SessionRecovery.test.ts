import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Either, Exit, Fiber, Layer, Scope, Stream, TestClock } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Chunk, TaskEvent } from "../../src/domain/Events.js"
import type { ToolCall } from "../../src/domain/Messages.js"
import * as PE from "../../src/domain/ProviderError.js"
import { STALE_APPROVAL_REASON } from "../../src/domain/Tags.js"
import type { Approver } from "../../src/programs/session/ApprovalGate.js"
import { open } from "../../src/programs/session/Session.js"
import { Backend } from "../../src/services/Backend.js"
import { BatonServer, serve } from "../../src/programs/server/Server.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { layerRemote } from "../../src/services/backend/Remote.js"
import { layerScripted, ProviderScript, Turn } from "../../src/services/provider/Scripted.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import { ToolExecutor } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import { assertOrdering, byType, Gates, sessionLayer } from "../support/sessionHarness.js"
import { tempDir } from "../support/tempDir.js"
import { awaitSleeps, collect, eventually, input, user } from "../support/testing.js"

const allow: Approver = () => Effect.succeed("allow")

/** A backend whose view of pending approvals is stale `times` times: a desync, as after a crash elsewhere. */
const withStaleView = (times: number) =>
  Effect.gen(function*() {
    const inner = yield* Backend
    let lies = times
    return Backend.of({
      ...inner,
      pendingApprovals: (id) => (lies-- > 0 ? Effect.succeed<ReadonlyArray<ToolCall>>([]) : inner.pendingApprovals(id))
    })
  })

/** Leaves a conversation waiting on tool calls, as a client that died mid-approval would. */
const leavePending = Effect.gen(function*() {
  const backend = yield* Backend
  const conv = yield* backend.createConversation({ system_prompt: "" })
  yield* collect(backend.send(conv.id, input(user("first"))))
  assert.strictEqual((yield* backend.pendingApprovals(conv.id)).length, 1)
  return conv.id
})

/** A task started while another client's run (held by gate 1) keeps the conversation busy: it waits. */
const busyByAnother = Effect.gen(function*() {
  const backend = yield* Backend
  const gates = yield* Gates
  const conv = yield* backend.createConversation({ system_prompt: "" })
  const other = yield* Effect.fork(collect(backend.send(conv.id, input(user("another client")))))
  yield* eventually(Effect.map(backend.history(conv.id), (items) => items.some((h) => h.item.type === "request_begin")), "the other run started")
  const session = yield* open({ conversationId: conv.id, approver: allow })
  const mine = yield* Effect.fork(collect(session.run("mine")))
  yield* awaitSleeps()
  return { gates, mine, other, session }
})

describe("Session recovery", () => {
  it.scopedLive("a stale pending approval is closed once with a desync denial, then the message goes through", () =>
    Effect.gen(function*() {
      const id = yield* leavePending
      const stale = yield* withStaleView(1)
      const session = yield* open({ conversationId: id, approver: allow }).pipe(Effect.provideService(Backend, stale))
      const events = yield* collect(session.run("hello again"))
      assertOrdering(events.filter((e) => e.type !== "tool_call"))
      const decision = byType(events, "approval_decision")[0]!
      assert.deepStrictEqual([decision.tool_call_id, decision.decision, decision.source], ["c1", "deny", "recovery"])
      const closed = byType(events, "tool_return")[0]!
      assert.deepStrictEqual([closed.status, closed.content], ["denied", STALE_APPROVAL_REASON])
      const history = (yield* (yield* ProviderScript).requests)[1]!.history
      assert.deepStrictEqual(history.slice(-2).map((m) => m.type), ["tool_return", "user_message"])
      const stop = events.at(-1)!
      assert.strictEqual(stop.type === "stop_reason" && stop.reason, "end_turn")
    }).pipe(Effect.provide(sessionLayer("memory", [Turn.toolCalls([{ id: "c1", name: "Bash", args: { command: "ls" } }]), Turn.text("hi")]))))

  it.scopedLive("a second desync in the same task fails cleanly with ApprovalPending, running nothing", () =>
    Effect.gen(function*() {
      const id = yield* leavePending
      const stale = yield* withStaleView(99)
      const session = yield* open({ conversationId: id, approver: allow }).pipe(Effect.provideService(Backend, stale))
      const result = yield* Effect.either(collect(session.run("hello again")))
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) assert.strictEqual(result.left._tag, "ApprovalPending")
      assert.isFalse(yield* session.isRunning)
      assert.strictEqual((yield* (yield* ProviderScript).requests).length, 1)
    }).pipe(Effect.provide(sessionLayer("memory", [Turn.toolCalls([{ id: "c1", name: "Bash", args: { command: "ls" } }])]))))

  it.scopedLive("retry after an auth stop re-runs the conversation: no new user message, the prompt in the request once", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const conv = yield* backend.createConversation({ system_prompt: "" })
      const session = yield* open({ conversationId: conv.id, approver: allow })
      const refused = yield* collect(session.run("hello"))
      assert.strictEqual(byType(refused, "stop_reason").at(-1)?.reason, "auth")
      const events = yield* collect(session.retry())
      assert.deepStrictEqual(byType(events, "user_message"), [], "the retry's task shows no new prompt")
      assert.deepStrictEqual(byType(events, "assistant_message").map((m) => m.content), ["hi"])
      const history = (yield* (yield* ProviderScript).requests)[1]!.history
      assert.deepStrictEqual(history.map((m) => m.type), ["user_message"])
      // Nothing left to retry after an answer: a clear error, nothing run.
      const again = yield* Effect.either(collect(session.retry()))
      assert.isTrue(Either.isLeft(again) && again.left._tag === "InvalidInput")
      assert.strictEqual((yield* (yield* ProviderScript).requests).length, 2)
    }).pipe(Effect.provide(sessionLayer("memory", [Turn.fail(new PE.ProviderAuth({ status: 401, message: "invalid x-api-key" })), Turn.text("hi")]))))

  it.scoped("a busy conversation is waited for (10 s, then 20 s), then the task runs", () =>
    Effect.gen(function*() {
      const { gates, mine, other } = yield* busyByAnother
      yield* TestClock.adjust(10_000)
      yield* awaitSleeps()
      yield* gates.release(1)
      yield* Fiber.join(other)
      yield* TestClock.adjust(20_000)
      const events = yield* Fiber.join(mine)
      const answer = byType(events, "assistant_message").map((m) => m.content)
      assert.deepStrictEqual(answer, ["mine answered"])
      // Each wait is announced before it starts, as a client-side task event.
      assert.deepStrictEqual(byType(events, "wait").map((w) => [w.reason, w.retry_in_ms]), [["busy", 10_000], ["busy", 20_000]])
      assert.isTrue(events.indexOf(byType(events, "wait")[0]!) < events.indexOf(byType(events, "request_begin")[0]!))
    }).pipe(Effect.provide(sessionLayer("memory", [Turn.text("other answered"), Turn.text("mine answered")], [1]))))

  it.scoped("skipReconnectWait ends a busy wait at once (no clock moves), without changing the count", () =>
    Effect.gen(function*() {
      const { gates, mine, other, session } = yield* busyByAnother
      yield* gates.release(1)
      yield* Fiber.join(other)
      yield* session.skipReconnectWait
      const events = yield* Fiber.join(mine)
      assert.deepStrictEqual(byType(events, "wait").map((w) => w.retry_in_ms), [10_000])
      assert.deepStrictEqual(byType(events, "assistant_message").map((m) => m.content), ["mine answered"])
    }).pipe(Effect.provide(sessionLayer("memory", [Turn.text("other answered"), Turn.text("mine answered")], [1]))))
})

/** The backend: in process, or a client of a server (port 0) hosting it. */
const backendOn = (where: "local" | "remote") =>
  where === "local"
    ? layerLocal()
    : Layer.unwrapEffect(Effect.map(BatonServer, (server) => layerRemote({ url: server.url }))).pipe(
      Layer.provide(serve({ port: 0, drainTimeoutMs: 1_000 })),
      Layer.provide(layerLocal())
    )

describe.each(["local", "remote"] as const)("Session resume (%s backend)", (where) => {
  it.scopedLive("after the process died with calls pending, the next run asks the approver again and completes", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const filename = Path.join(root, "baton.db")
      const workspace = Path.join(root, "ws")
      Fs.mkdirSync(workspace)
      Fs.writeFileSync(Path.join(workspace, "notes.txt"), "resume works\n")
      const died = yield* Scope.make()
      const before = yield* Layer.buildWithScope(
        backendOn(where).pipe(
          Layer.provideMerge(layerScripted([Turn.toolCalls([{ id: "c1", name: "Read", args: { file_path: "notes.txt" } }])])),
          Layer.provide(layerSqlite({ filename }))
        ),
        died
      )
      const id = yield* leavePending.pipe(Effect.provide(before))
      yield* Scope.close(died, Exit.void)

      const executor = yield* makeToolExecutor({ workspace })
      const after = yield* Layer.build(
        backendOn(where).pipe(
          Layer.provideMerge(layerScripted([Turn.text("the notes say: resume works")])),
          Layer.provide(layerSqlite({ filename })),
          Layer.provideMerge(Layer.succeed(ToolExecutor, executor))
        )
      )
      const asked: Array<string> = []
      const session = yield* open({
        conversationId: id,
        approver: (request) => Effect.sync(() => (asked.push(request.call.tool_call_id), "allow" as const))
      }).pipe(Effect.provide(after))
      const events: ReadonlyArray<TaskEvent> = yield* collect(session.run([]))
      assertOrdering(events)
      assert.deepStrictEqual(asked, ["c1"])
      assert.include(byType(events, "tool_return")[0]!.content, "resume works")
      const stop = events.at(-1)!
      assert.strictEqual(stop.type === "stop_reason" && stop.reason, "end_turn")
      assert.deepStrictEqual(yield* Context.get(after, Backend).pendingApprovals(id), [])
    }))
})

/** A backend whose run streams repeat every tool_call chunk, as a stream replayed over an overlap would. */
const repeatingCalls = Effect.map(Backend, (inner) =>
  Backend.of({
    ...inner,
    send: (id, sent) =>
      inner.send(id, sent).pipe(Stream.mapConcat((chunk): ReadonlyArray<Chunk> => (chunk.type === "tool_call" ? [chunk, chunk] : [chunk])))
  }))

describe("Session: repeated approval requests", () => {
  it.scopedLive("a tool call that comes twice is asked, run and answered once (Letta seed §7.2), not an InvalidToolCallIds", () =>
    Effect.gen(function*() {
      const backend = yield* repeatingCalls
      const asked: Array<string> = []
      const session = yield* open({
        approver: (request) => Effect.sync(() => (asked.push(request.call.tool_call_id), "allow" as const))
      }).pipe(Effect.provideService(Backend, backend))
      const events = yield* collect(session.run("list it"))
      assert.deepStrictEqual(asked, ["c1"])
      assert.deepStrictEqual(byType(events, "tool_return").map((r) => r.tool_call_id), ["c1"])
      const stop = events.at(-1)!
      assert.strictEqual(stop.type === "stop_reason" && stop.reason, "end_turn")
    }).pipe(Effect.provide(sessionLayer("memory", [Turn.toolCalls([{ id: "c1", name: "LS", args: {} }]), Turn.text("listed")]))))
})
