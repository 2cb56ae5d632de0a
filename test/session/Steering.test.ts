import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Stream } from "effect"
import type { Message } from "../../src/domain/Messages.js"
import type { Approver } from "../../src/programs/session/ApprovalGate.js"
import { open } from "../../src/programs/session/Session.js"
import { ProviderScript, Turn } from "../../src/services/provider/Scripted.js"
import { Backend, byType, Gates, sessionLayer } from "../support/sessionHarness.js"
import { collect } from "../support/testing.js"

/**
 * Steering is held by the backend (Backend.steer, persisted): it reaches the very next model request
 * the backend assembles, even the one it makes right after a compaction inside the run.
 */

const allow: Approver = () => Effect.succeed("allow")
const STEERING = "[user_steering]\nmind the tests\n[/user_steering]"
const said = (history: ReadonlyArray<Message>) => history.flatMap((m) => (m.type === "user_message" ? [m.content] : []))

describe.each(["memory", "sqlite", "remote"] as const)("steering held by the backend (%s)", (kind) => {
  it.scopedLive("a steer sent while a compaction runs inside the run reaches the request right after it", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const gates = yield* Gates
      const script = yield* ProviderScript
      const conv = yield* backend.createConversation({ system_prompt: "sys", compaction: { maxContextLength: 100, contextWindow: 100_000 } })
      const session = yield* open({ conversationId: conv.id, approver: allow })
      yield* collect(session.run("one"))
      // Call 2 is the compaction's summary request (call 1 reported 700 tokens): held until released.
      const task = yield* Effect.fork(collect(session.run("two")))
      yield* gates.reached(2)
      assert.isTrue(yield* session.steer("mind the tests"))
      yield* gates.release(2)
      const events = yield* Fiber.join(task)
      const requests = yield* script.requests
      assert.strictEqual(requests.length, 3)
      assert.notInclude(said(requests[1]!.history), STEERING, "the summary request is not steered")
      assert.deepStrictEqual(said(requests[2]!.history).slice(-2), ["two", STEERING], "the very next request carries the steering")
      assert.include(byType(events, "user_message").map((m) => m.content), STEERING, "the task stream shows it")
      assert.deepStrictEqual(yield* backend.takeSteering(conv.id), [], "drained, not left queued")
    }).pipe(Effect.provide(sessionLayer(kind, [
      Turn.text("a", { usage: { totalTokens: 700 } }),
      Turn.text("[summary]s[/summary]"),
      Turn.text("ok, with tests")
    ], [2]))))

  // On SQLite this once hung in teardown: the session's last commit reached the group-commit writer
  // just as the closing scope interrupted it, and was dropped (fixed in store/SqlGroupCommit.ts).
  it.scopedLive("the queue is dropped when the task ends: a steer no request took is gone after an interrupt", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const gates = yield* Gates
      const conv = yield* backend.createConversation({ system_prompt: "sys" })
      const session = yield* open({ conversationId: conv.id, approver: allow })
      const task = yield* Effect.fork(collect(session.run("read it")))
      yield* gates.reached(1)
      assert.isTrue(yield* session.steer("never delivered"))
      yield* session.interrupt
      yield* Fiber.join(task)
      assert.isFalse(yield* session.steer("after the end"), "no task runs")
      assert.deepStrictEqual(yield* backend.takeSteering(conv.id), [])
    }).pipe(Effect.provide(sessionLayer(kind, [Turn.text("unused")], [1]))))

  it.scopedLive("a steer that races the task's end is refused by the backend: false, nothing held, the task is not continued", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const script = yield* ProviderScript
      const conv = yield* backend.createConversation({ system_prompt: "sys" })
      // The run's stream stays open after its stop_reason until `finish`: the backend has ended the
      // task while this session has not seen the end yet, so it still takes steering.
      const ended = yield* Deferred.make<void>()
      const finish = yield* Deferred.make<void>()
      const lagging: typeof backend = {
        ...backend,
        send: (id, input) =>
          Stream.concat(
            Stream.tap(backend.send(id, input), (chunk) => (chunk.type === "stop_reason" ? Deferred.succeed(ended, undefined) : Effect.void)),
            Stream.drain(Stream.fromEffect(Deferred.await(finish)))
          )
      }
      const session = yield* open({ conversationId: conv.id, approver: allow }).pipe(Effect.provideService(Backend, lagging))
      const task = yield* Effect.fork(collect(session.run("hi")))
      yield* Deferred.await(ended)
      const steered = yield* session.steer("just too late")
      const held = yield* backend.heldSteering(conv.id)
      yield* Deferred.succeed(finish, undefined)
      const events = yield* Fiber.join(task)
      assert.isFalse(steered, "the backend saw no task: the caller prompts with it")
      assert.deepStrictEqual(held, [])
      assert.deepStrictEqual(byType(events, "stop_reason").map((s) => s.reason), ["end_turn"])
      assert.strictEqual((yield* script.requests).length, 1)
    }).pipe(Effect.provide(sessionLayer(kind, [Turn.text("hello"), Turn.text("continued, wrongly")]))))

  it.scopedLive("another client steers the same conversation through the backend; the running task's next request has it", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const gates = yield* Gates
      const script = yield* ProviderScript
      const conv = yield* backend.createConversation({ system_prompt: "sys" })
      const session = yield* open({ conversationId: conv.id, approver: allow })
      const task = yield* Effect.fork(collect(session.run("read it")))
      yield* gates.reached(1)
      // Not through this session: straight to the backend, as a web page would.
      yield* backend.steer(conv.id, "mind the tests")
      yield* gates.release(1)
      yield* Fiber.join(task)
      const requests = yield* script.requests
      assert.deepStrictEqual(said(requests[1]!.history).slice(-1), [STEERING])
    }).pipe(Effect.provide(sessionLayer(kind, [
      Turn.toolCalls([{ id: "c1", name: "LS", args: {} }]),
      Turn.text("done")
    ], [1]))))
})
