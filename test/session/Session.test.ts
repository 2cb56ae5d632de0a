import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Decision, TaskEvent } from "../../src/domain/Events.js"
import { DENIED_TEXT, INTERRUPTED_TEXT } from "../../src/domain/Messages.js"
import type { ApprovalRequest, Approver } from "../../src/programs/session/ApprovalGate.js"
import { open } from "../../src/programs/session/Session.js"
import { ProviderScript, Turn } from "../../src/services/provider/Scripted.js"
import { awaitFileText, procGone } from "../support/Processes.js"
import {
  assertOrdering,
  Backend,
  byType,
  Gates,
  sessionLayer,
  type StoreKind,
  Workspace
} from "../support/sessionHarness.js"
import { onPostgres } from "../support/pgDatabase.js"
import { collect, eventually } from "../support/testing.js"

const allow: Approver = () => Effect.succeed("allow")

/** An approver that answers from a list and records what it was asked. */
const scripted = (answers: ReadonlyArray<Decision>) => {
  const asked: Array<ApprovalRequest> = []
  const approver: Approver = (request) =>
    Effect.sync(() => {
      asked.push(request)
      return answers[asked.length - 1] ?? "deny"
    })
  return { approver, asked }
}

const suite = (kind: StoreKind) =>
  describe(`Session over the local backend (${kind} store)`, () => {
    it.scopedLive("one tool, then the answer", () =>
      Effect.gen(function*() {
        const ws = yield* Workspace
        Fs.writeFileSync(Path.join(ws.dir, "a.txt"), "alpha\n")
        const session = yield* open({ approver: allow })
        const events = yield* collect(session.run("what is in a.txt?"))
        assertOrdering(events)
        const model = events.filter((e) => e.run_id !== undefined && !e.type.endsWith("_delta")).map((e) => e.type)
        assert.deepStrictEqual(model, [
          "request_begin", "tool_call", "token_usage", "request_end", "stop_reason",
          "request_begin", "assistant_message", "token_usage", "request_end", "stop_reason"
        ])
        assert.deepStrictEqual(events.filter((e) => e.run_id === undefined).map((e) => e.type), ["user_message", "approval_decision", "tool_return"])
        const result = byType(events, "tool_return")[0]!
        assert.deepStrictEqual([result.status, result.content.includes("alpha")], ["success", true])
        const second = (yield* (yield* ProviderScript).requests)[1]!.history
        assert.deepStrictEqual(second.map((m) => m.type), ["user_message", "tool_call", "tool_return"])
      }).pipe(Effect.provide(sessionLayer(kind, [Turn.toolCalls([{ id: "c1", name: "Read", args: { file_path: "a.txt" } }]), Turn.text("it says alpha")]))))

    it.scopedLive("three parallel calls, two allowed and one denied: results in call order, denial text exact", () =>
      Effect.gen(function*() {
        const ws = yield* Workspace
        Fs.writeFileSync(Path.join(ws.dir, "a.txt"), "A\n")
        Fs.writeFileSync(Path.join(ws.dir, "b.txt"), "B\n")
        const { approver, asked } = scripted(["allow", "deny", "allow"])
        const session = yield* open({ approver })
        const events = yield* collect(session.run("read three files"))
        assertOrdering(events)
        assert.deepStrictEqual(asked.map((a) => a.call.tool_call_id), ["c1", "c2", "c3"])
        const decisions = byType(events, "approval_decision").map((d) => [d.tool_call_id, d.decision, d.source])
        assert.deepStrictEqual(decisions, [["c1", "allow", "user"], ["c2", "deny", "user"], ["c3", "allow", "user"]])
        const history = (yield* (yield* ProviderScript).requests)[1]!.history
        const returns = history.flatMap((m) => (m.type === "tool_return" ? [[m.tool_call_id, m.status, m.content]] : []))
        assert.deepStrictEqual(returns.map((r) => r[0]), ["c1", "c2", "c3"])
        assert.deepStrictEqual(returns[1], ["c2", "denied", DENIED_TEXT])
        assert.include(String(returns[2]![2]), "B")
      }).pipe(Effect.provide(sessionLayer(kind, [
        Turn.toolCalls([
          { id: "c1", name: "Read", args: { file_path: "a.txt" } },
          { id: "c2", name: "Bash", args: { command: "rm -rf ." } },
          { id: "c3", name: "Read", args: { file_path: "b.txt" } }
        ]),
        Turn.text("done")
      ]))))

    it.scopedLive("\"allow always\" grants the session: the second identical call is not asked", () =>
      Effect.gen(function*() {
        const { approver, asked } = scripted(["allow_always"])
        const session = yield* open({ approver })
        const events = yield* collect(session.run("echo twice"))
        assertOrdering(events)
        assert.strictEqual(asked.length, 1)
        assert.strictEqual(asked[0]!.grant.text, "Bash(echo hi:*)")
        const decisions = byType(events, "approval_decision").map((d) => [d.decision, d.source, d.rule])
        assert.deepStrictEqual(decisions, [["allow_always", "user", "Bash(echo hi:*)"], ["allow", "session", "Bash(echo hi:*)"]])
        assert.deepStrictEqual(byType(events, "tool_return").map((r) => r.status), ["success", "success"])
      }).pipe(Effect.provide(sessionLayer(kind, [
        Turn.toolCalls([{ id: "c1", name: "Bash", args: { command: "echo hi" } }]),
        Turn.toolCalls([{ id: "c2", name: "Bash", args: { command: "echo hi" } }]),
        Turn.text("ok")
      ]))))

    it.scopedLive("no approver: every call that needs asking is denied; rules still allow", () =>
      Effect.gen(function*() {
        const session = yield* open({ rules: { allow: ["LS"], ask: [], deny: [], additionalDirectories: [] } })
        const events = yield* collect(session.run("go"))
        assertOrdering(events)
        const decisions = byType(events, "approval_decision").map((d) => [d.tool_call_id, d.decision, d.source])
        assert.deepStrictEqual(decisions, [["c1", "deny", "default"], ["c2", "allow", "rule"]])
        assert.deepStrictEqual(byType(events, "tool_return").map((r) => [r.tool_call_id, r.status]), [["c1", "denied"], ["c2", "success"]])
      }).pipe(Effect.provide(sessionLayer(kind, [
        Turn.toolCalls([{ id: "c1", name: "Bash", args: { command: "touch x" } }, { id: "c2", name: "LS", args: {} }]),
        Turn.text("ok")
      ]))))

    it.scopedLive("interrupt during a 300 s Bash: abort, process gone, carry-over A pairs every call next time", () =>
      Effect.gen(function*() {
        const ws = yield* Workspace
        Fs.writeFileSync(Path.join(ws.dir, "a.txt"), "A\n")
        const session = yield* open({ approver: allow })
        const seen: Array<TaskEvent> = []
        const fiber = yield* Effect.fork(Stream.runForEach(session.run("run it"), (e) => Effect.sync(() => seen.push(e))))
        const pid = Number(yield* awaitFileText(Path.join(ws.dir, "bash.pid")))
        yield* eventually(Effect.sync(() => seen.some((e) => e.type === "tool_return")), "the Read finished")
        // Carry-over A needs the model's turn complete: its stop_reason may still be on the way (a
        // store over the network commits it after the shell has started).
        yield* eventually(Effect.sync(() => seen.some((e) => e.type === "stop_reason")), "the model's turn ended")
        yield* session.interrupt
        yield* Fiber.join(fiber)
        assert.isTrue(procGone(pid), "the shell is gone")
        assertOrdering(seen)
        assert.strictEqual(seen.at(-1)!.type, "abort")
        assert.deepStrictEqual(byType(seen, "tool_return").map((r) => [r.tool_call_id, r.status]), [["r1", "success"], ["b1", "interrupted"]])
        assert.isFalse(yield* session.isRunning)
        yield* eventually(Effect.map((yield* Backend).pendingApprovals(session.conversationId), (p) => p.length === 0), "carry-over recorded")
        const next = yield* collect(session.run("what happened?"))
        assertOrdering(next)
        const history = (yield* (yield* ProviderScript).requests)[1]!.history
        const returns = history.flatMap((m) => (m.type === "tool_return" ? [[m.tool_call_id, m.status, m.content]] : []))
        assert.deepStrictEqual(returns.map((r) => r.slice(0, 2)), [["r1", "success"], ["b1", "interrupted"]])
        assert.strictEqual(returns[1]![2], INTERRUPTED_TEXT)
        const last = history.at(-1)!
        assert.strictEqual(last.type === "user_message" ? last.content : last.type, "what happened?")
      }).pipe(Effect.provide(sessionLayer(kind, [
        Turn.toolCalls([
          { id: "r1", name: "Read", args: { file_path: "a.txt" } },
          { id: "b1", name: "Bash", args: { command: "echo $$ > bash.pid; sleep 300 & wait" } }
        ]),
        Turn.text("you stopped me")
      ]))))

    it.scopedLive("interrupt mid text: carry-over B flattens the partial turn", () =>
      Effect.gen(function*() {
        const session = yield* open({ approver: allow })
        const seen: Array<TaskEvent> = []
        const fiber = yield* Effect.fork(Stream.runForEach(session.run("tell me"), (e) => Effect.sync(() => seen.push(e))))
        yield* eventually(Effect.sync(() => seen.some((e) => e.type === "text_delta")), "text started")
        yield* session.interrupt
        yield* Fiber.join(fiber)
        assert.strictEqual(seen.at(-1)!.type, "abort")
        yield* collect(session.run("go on"))
        const history = (yield* (yield* ProviderScript).requests)[1]!.history
        const texts = history.flatMap((m) => (m.type === "user_message" ? [m.content] : []))
        assert.strictEqual(texts.length, 3)
        assert.match(texts[1]!, /^\[turn_aborted\][\s\S]*Once upon a[\s\S]*\[\/turn_aborted\]$/)
        assert.strictEqual(texts[2], "go on")
        assert.isFalse(history.some((m) => m.type === "assistant_message"))
        const trace = yield* (yield* Backend).history(session.conversationId)
        assert.isFalse(trace.some((h) => h.inTrace && h.item.type === "user_message" && h.item.content.startsWith("[turn_aborted]")), "carry-over is model-only")
      }).pipe(Effect.provide(sessionLayer(kind, [Turn.stall({ text: "Once upon a" }), Turn.text("time")]))))

    it.scopedLive("steer during tool execution: the steering goes with the results", () =>
      Effect.gen(function*() {
        const ws = yield* Workspace
        const session = yield* open({ approver: allow })
        const fiber = yield* Effect.fork(collect(session.run("build it")))
        yield* awaitFileText(Path.join(ws.dir, "started"))
        assert.isTrue(yield* session.steer("also run the tests"))
        Fs.writeFileSync(Path.join(ws.dir, "go"), "1")
        const events = yield* Fiber.join(fiber)
        assertOrdering(events)
        const steering = byType(events, "user_message").map((m) => m.content)
        assert.deepStrictEqual(steering, ["build it", "[user_steering]\nalso run the tests\n[/user_steering]"])
        const history = (yield* (yield* ProviderScript).requests)[1]!.history
        assert.deepStrictEqual(history.slice(-2).map((m) => m.type), ["tool_return", "user_message"])
      }).pipe(Effect.provide(sessionLayer(kind, [
        Turn.toolCalls([{ id: "c1", name: "Bash", args: { command: "echo 1 > started; while [ ! -f go ]; do sleep 0.02; done; echo built" } }]),
        Turn.text("built and tested")
      ]))))

    it.scopedLive("steer as the model ends its turn: the task continues with the steering", () =>
      Effect.gen(function*() {
        const gates = yield* Gates
        const session = yield* open({ approver: allow })
        const seen: Array<TaskEvent> = []
        const fiber = yield* Effect.fork(Stream.runForEach(session.run("first"), (e) => Effect.sync(() => seen.push(e))))
        yield* eventually(Effect.sync(() => seen.some((e) => e.type === "request_begin")), "the first request started")
        assert.isTrue(yield* session.steer("and one more thing"))
        yield* gates.release(1)
        yield* Fiber.join(fiber)
        const stops = byType(seen, "stop_reason").map((s) => s.reason)
        assert.deepStrictEqual(stops, ["end_turn", "end_turn"])
        assert.strictEqual((yield* (yield* ProviderScript).requests).length, 2)
        assert.isFalse(yield* session.steer("too late"), "no task runs any more")
      }).pipe(Effect.provide(sessionLayer(kind, [Turn.text("answer one"), Turn.text("answer two")], [1]))))

    it.scopedLive("max turns stops the task, keeping every result", () =>
      Effect.gen(function*() {
        const session = yield* open({ approver: allow })
        const events = yield* collect(session.run("loop", { maxTurns: 2 }))
        assertOrdering(events)
        const last = events.at(-1)!
        assert.strictEqual(last.type === "stop_reason" && last.reason, "max_turns")
        assert.strictEqual((yield* (yield* ProviderScript).requests).length, 2)
        assert.deepStrictEqual(yield* (yield* Backend).pendingApprovals(session.conversationId), [])
      }).pipe(Effect.provide(sessionLayer(kind, [
        Turn.toolCalls([{ id: "c1", name: "LS", args: {} }]),
        Turn.toolCalls([{ id: "c2", name: "LS", args: {} }]),
        Turn.text("never reached")
      ]))))

    it.scopedLive("the consumer stops reading halfway: tools and run are interrupted, nothing left unpaired", () =>
      Effect.gen(function*() {
        const ws = yield* Workspace
        const backend = yield* Backend
        const session = yield* open({ approver: allow })
        const pidFile = Path.join(ws.dir, "bash.pid")
        // Stop reading only once the shell really runs, so there is something to kill.
        yield* collect(session.run("go").pipe(
          Stream.tap((e) => (e.type === "approval_decision" ? awaitFileText(pidFile) : Effect.void)),
          Stream.takeUntil((e) => e.type === "approval_decision")
        ))
        const pid = Number(yield* awaitFileText(pidFile))
        yield* eventually(Effect.sync(() => procGone(pid)), "the shell was killed")
        // The carry-over is recorded in the background; with a store over the network the call may not
        // even be committed yet when reading stops, so "no pending call" alone proves nothing.
        yield* eventually(Effect.map(backend.history(session.conversationId), (trace) => trace.some((h) => h.item.type === "abort")), "the abort recorded")
        assert.deepStrictEqual(yield* backend.pendingApprovals(session.conversationId), [], "every call closed")
        assert.isFalse(yield* session.isRunning)
      }).pipe(Effect.provide(sessionLayer(kind, [
        Turn.toolCalls([{ id: "b1", name: "Bash", args: { command: "echo $$ > bash.pid; sleep 300" } }])
      ]))))
  })

suite("memory")
suite("sqlite")
onPostgres("Session over the local backend (postgres store)", () => suite("postgres"))
suite("remote")

describe("Session, one task at a time", () => {
  it.scopedLive("a second run while a task runs fails with InvalidInput and leaves the task alone", () =>
    Effect.gen(function*() {
      const gates = yield* Gates
      const session = yield* open({ approver: allow })
      const seen: Array<TaskEvent> = []
      const first = yield* Effect.fork(Stream.runForEach(session.run("first"), (e) => Effect.sync(() => seen.push(e))))
      yield* eventually(Effect.sync(() => seen.some((e) => e.type === "request_begin")), "the first request started")
      const second = yield* Effect.either(collect(session.run("second")))
      assert.isTrue(Either.isLeft(second) && second.left._tag === "InvalidInput" && /already running/.test(second.left.message))
      assert.isTrue(yield* session.isRunning)
      assert.isTrue(yield* session.steer("still steerable"), "the running task still takes steering")
      yield* gates.release(1)
      yield* Fiber.join(first)
      assert.isFalse(yield* session.isRunning)
      const answers = byType(seen, "assistant_message").map((m) => m.content)
      assert.deepStrictEqual(answers, ["answer one", "answer two"])
      const next = yield* collect(session.run("third"))
      assert.deepStrictEqual(byType(next, "assistant_message").map((m) => m.content), ["answer three"])
    }).pipe(Effect.provide(sessionLayer("memory", [Turn.text("answer one"), Turn.text("answer two"), Turn.text("answer three")], [1]))))
})

describe("Session without a task", () => {
  it.scopedLive("steer with no task returns false", () =>
    Effect.gen(function*() {
      const session = yield* open({})
      assert.isFalse(yield* session.steer("hello?"))
    }).pipe(Effect.provide(sessionLayer("memory", []))))
})
