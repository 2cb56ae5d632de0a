import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Scope, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { TaskEvent } from "../../src/domain/Events.js"
import { ToolCallId } from "../../src/domain/Ids.js"
import * as PE from "../../src/domain/ProviderError.js"
import type { ProviderRequest } from "../../src/domain/ProviderEvent.js"
import { GENERAL_PURPOSE_PROMPT } from "../../src/domain/Subagents.js"
import type { ApprovalRequest, Approver } from "../../src/programs/session/ApprovalGate.js"
import { open } from "../../src/programs/session/Session.js"
import { Turn } from "../../src/services/provider/Scripted.js"
import { fakeTools, makeProbe, settle } from "../support/FakeTools.js"
import { awaitFileText, procGone } from "../support/Processes.js"
import { onPostgres } from "../support/pgDatabase.js"
import { firstUserText, Routed, routedLayer, step } from "../support/routedModel.js"
import { assertOrdering, Backend, byType, type StoreKind, Workspace } from "../support/sessionHarness.js"
import { tempDir } from "../support/tempDir.js"
import { collect, eventually, input, toolResult, user } from "../support/testing.js"

/** An approver that allows everything (or answers `answer(request)`) and records who asked what. */
const recording = (answer: (request: ApprovalRequest) => "allow" | "allow_always" | "deny" = () => "allow") => {
  const asked: Array<string> = []
  const approver: Approver = (request) =>
    Effect.sync(() => {
      asked.push(request.origin === undefined ? request.call.tool_call_id : `${request.origin.description}:${request.call.tool_call_id}`)
      return answer(request)
    })
  return { approver, asked }
}

const isChild = (request: ProviderRequest) => !request.tools.some((t) => t.name === "Task")

const task = (id: string, description: string, prompt: string, subagentType?: string) => ({
  id,
  name: "Task",
  args: { description, prompt, ...(subagentType !== undefined ? { subagent_type: subagentType } : {}) }
})

const delegation = (request: ProviderRequest) =>
  Effect.succeed(
    isChild(request)
      ? [
        Turn.toolCalls([{ id: "k1", name: "Read", args: { file_path: "a.txt" } }]),
        Turn.toolCalls([{ id: "k2", name: "Edit", args: { file_path: "a.txt", old_string: "alpha", new_string: "beta" } }]),
        Turn.text("child report: a.txt now says beta")
      ][step(request)]!
      : step(request) === 0
      ? Turn.toolCalls([task("t1", "fix a", "change alpha to beta in a.txt")])
      : Turn.text("the subagent fixed it")
  )

const suite = (kind: StoreKind) =>
  describe(`Subagents (${kind})`, () => {
    it.scopedLive("a Task call runs a child: its Read and Edit go through the parent's approver with the origin, its answer is the Task result", () =>
      Effect.gen(function*() {
        const ws = yield* Workspace
        const backend = yield* Backend
        const model = yield* Routed
        Fs.writeFileSync(Path.join(ws.dir, "a.txt"), "alpha\n")
        const { approver, asked } = recording()
        const session = yield* open({ approver })
        const events = yield* collect(session.run("fix a.txt using a subagent"))
        assert.deepStrictEqual(asked, ["t1", "fix a:k1", "fix a:k2"])
        assert.strictEqual(Fs.readFileSync(Path.join(ws.dir, "a.txt"), "utf8"), "beta\n")

        const own = events.filter((e) => e.origin === undefined)
        const child = events.filter((e) => e.origin !== undefined)
        assertOrdering(own)
        assertOrdering(child)
        const childId = child[0]!.origin!.conversation_id
        assert.isTrue(child.every((e) => e.origin!.conversation_id === childId && e.origin!.tool_call_id === "t1" && e.origin!.description === "fix a"))
        assert.deepStrictEqual(byType(child, "tool_return").map((r) => [r.tool_call_id, r.status]), [["k1", "success"], ["k2", "success"]])
        assert.deepStrictEqual(byType(child, "user_message").map((m) => m.content), ["change alpha to beta in a.txt"])
        const result = byType(own, "tool_return")[0]!
        assert.deepStrictEqual([result.tool_call_id, result.status, result.content], ["t1", "success", "child report: a.txt now says beta"])
        assert.deepStrictEqual(byType(own, "assistant_message").map((m) => m.content), ["the subagent fixed it"])

        const conversation = yield* backend.getConversation(childId)
        assert.deepStrictEqual(conversation.parent, { conversation_id: session.conversationId, tool_call_id: "t1" })
        assert.strictEqual(conversation.title, "fix a")
        const parentRequests = model.requests.filter((r) => !isChild(r))
        const childRequests = model.requests.filter(isChild)
        assert.strictEqual(parentRequests.length, 2)
        assert.isTrue(parentRequests[0]!.tools.some((t) => t.name === "Task"))
        assert.isFalse(childRequests.some((r) => r.tools.some((t) => t.name === "Task")), "children are not offered Task")
        assert.isTrue(childRequests.every((r) => r.system === GENERAL_PURPOSE_PROMPT))
        const returned = parentRequests[1]!.history.at(-1)!
        assert.deepStrictEqual(
          returned.type === "tool_return" && [returned.tool_call_id, returned.content],
          ["t1", "child report: a.txt now says beta"]
        )
        assert.deepStrictEqual(yield* backend.pendingApprovals(childId), [])
      }).pipe(Effect.provide(routedLayer(kind, delegation))))
  })

suite("memory")
suite("sqlite")
onPostgres("Subagents (postgres)", () => suite("postgres"))
suite("remote")

describe("Subagents: types, grants, rules", () => {
  it.scopedLive("an unknown subagent_type is an error result naming the known ones; a typed child gets its prompt, tools and model", () =>
    Effect.gen(function*() {
      const ws = yield* Workspace
      const model = yield* Routed
      Fs.writeFileSync(Path.join(ws.dir, "a.txt"), "alpha\n")
      const { approver } = recording()
      const session = yield* open({
        approver,
        agents: { reviewer: { description: "reviews code", prompt: "You review.", tools: ["Read"], model: "small-model" } }
      })
      const events = yield* collect(session.run("review"))
      const results = byType(events.filter((e) => e.origin === undefined), "tool_return")
      const byId = new Map(results.map((r) => [String(r.tool_call_id), r]))
      assert.strictEqual(byId.get("t1")!.status, "error")
      assert.include(byId.get("t1")!.content, `unknown subagent_type "nope"`)
      assert.include(byId.get("t1")!.content, "general-purpose, reviewer")
      assert.deepStrictEqual([byId.get("t2")!.status, byId.get("t2")!.content], ["success", "looks fine"])
      const child = model.requests.filter((r) => r.system === "You review.")
      assert.strictEqual(child.length, 2)
      assert.deepStrictEqual(child[0]!.tools.map((t) => t.name), ["Read"])
      assert.strictEqual(child[0]!.model, "small-model")
      const childResults = byType(events.filter((e) => e.origin !== undefined), "tool_return")
      assert.include(childResults.find((r) => r.tool_call_id === "r1")!.content, "Edit is not one of this subagent's tools (Read)")
      assert.include(childResults.find((r) => r.tool_call_id === "r2")!.content, "cannot start subagents")
      assert.include(model.requests[0]!.tools.find((t) => t.name === "Task")!.description, "reviewer: reviews code")
    }).pipe(Effect.provide(routedLayer("memory", (request) =>
      Effect.succeed(
        request.system === "You review."
          ? step(request) === 0
            ? Turn.toolCalls([
              { id: "r1", name: "Edit", args: { file_path: "a.txt", old_string: "alpha", new_string: "x" } },
              task("r2", "deeper", "go deeper")
            ])
            : Turn.text("looks fine")
          : step(request) === 0
          ? Turn.toolCalls([task("t1", "x", "p", "nope"), task("t2", "review", "review a.txt", "reviewer")])
          : Turn.text("reviewed")
      )))))

  it.scopedLive("the parent's session grant covers its child; a deny rule denies the child's call without asking", () =>
    Effect.gen(function*() {
      const ws = yield* Workspace
      Fs.writeFileSync(Path.join(ws.dir, "a.txt"), "alpha\n")
      const { approver, asked } = recording((request) => (request.call.tool_call_id === "p1" ? "allow_always" : "allow"))
      const session = yield* open({ approver, rules: { allow: [], ask: [], deny: ["Bash"], additionalDirectories: [] } })
      const events = yield* collect(session.run("go"))
      assert.deepStrictEqual(asked, ["p1", "t1"])
      const decisions = byType(events.filter((e) => e.origin !== undefined), "approval_decision").map((d) => [d.tool_call_id, d.decision, d.source])
      assert.deepStrictEqual(decisions, [["k1", "allow", "session"], ["k2", "deny", "rule"]])
    }).pipe(Effect.provide(routedLayer("memory", (request) =>
      Effect.succeed(
        isChild(request)
          ? step(request) === 0
            ? Turn.toolCalls([{ id: "k1", name: "Read", args: { file_path: "a.txt" } }, { id: "k2", name: "Bash", args: { command: "ls" } }])
            : Turn.text("child done")
          : [
            Turn.toolCalls([{ id: "p1", name: "Read", args: { file_path: "a.txt" } }]),
            Turn.toolCalls([task("t1", "look", "look at a.txt")]),
            Turn.text("all done")
          ][step(request)]!
      )))))
})

describe("Subagents: one question at a time, failures", () => {
  it.scopedLive("two children asking at once: the approver is asked one question at a time", () =>
    Effect.gen(function*() {
      const seen: Array<TaskEvent> = []
      let open_ = 0
      let most = 0
      const asked: Array<string> = []
      const approver: Approver = (request) =>
        Effect.gen(function*() {
          open_++
          most = Math.max(most, open_)
          asked.push(request.call.tool_call_id)
          // The first child's question stays open until the other child's call has arrived too.
          if (request.origin !== undefined && asked.length === 3) {
            yield* eventually(Effect.sync(() => seen.filter((e) => e.origin !== undefined && e.type === "tool_call").length === 2), "both children's calls arrived")
            yield* settle
          }
          open_--
          return "allow" as const
        })
      const session = yield* open({ approver })
      yield* Stream.runForEach(session.run("two at once"), (e) => Effect.sync(() => seen.push(e)))
      assert.deepStrictEqual(asked.slice(0, 2).sort(), ["tA", "tB"])
      assert.deepStrictEqual(asked.slice(2).sort(), ["a1", "b1"])
      assert.strictEqual(most, 1, "never two questions open at once")
    }).pipe(Effect.provide(routedLayer("memory", (request) =>
      Effect.succeed(
        isChild(request)
          ? step(request) === 0
            ? Turn.toolCalls([{ id: firstUserText(request) === "A" ? "a1" : "b1", name: "LS", args: {} }])
            : Turn.text(`${firstUserText(request)} done`)
          : step(request) === 0
          ? Turn.toolCalls([task("tA", "A", "A"), task("tB", "B", "B")])
          : Turn.text("both done")
      )))))

  it.scopedLive("a child whose model refuses the credentials: the Task result is an error saying so; the parent goes on", () =>
    Effect.gen(function*() {
      const { approver } = recording()
      const session = yield* open({ approver })
      const events = yield* collect(session.run("delegate"))
      const result = byType(events.filter((e) => e.origin === undefined), "tool_return")[0]!
      assert.strictEqual(result.status, "error")
      assert.include(result.content, "subagent «doomed» stopped (auth)")
      assert.include(result.content, "bad key")
      const last = events.at(-1)!
      assert.strictEqual(last.type === "stop_reason" && last.reason, "end_turn")
    }).pipe(Effect.provide(routedLayer("memory", (request) =>
      Effect.succeed(
        isChild(request)
          ? Turn.fail(new PE.ProviderAuth({ status: 401, message: "bad key" }))
          : step(request) === 0
          ? Turn.toolCalls([task("t1", "doomed", "try")])
          : Turn.text("the subagent could not run")
      )))))
})

describe("Subagents: locks", () => {
  const probe = makeProbe()
  it.scopedLive("two children editing one file run in call order; a child's Bash never overlaps the parent's Read; the Task calls hold no lock", () =>
    Effect.gen(function*() {
      const { approver, asked } = recording()
      const session = yield* open({ approver })
      const run = yield* Effect.fork(collect(session.run("two at once")))
      const askedFor = (id: string) => eventually(Effect.sync(() => asked.some((a) => a.endsWith(`:${id}`))), `${id} was approved`)
      const notStarted = (id: string) => Effect.map(Deferred.poll(probe.started(id)), Option.isNone)

      yield* Deferred.await(probe.started("p1"))
      yield* Deferred.await(probe.started("a1"))
      // b1 was started after a1 (child B asks the model only once a1 runs): it waits for the file.
      yield* askedFor("b1")
      yield* settle
      assert.isTrue(yield* notStarted("b1"), "b1 waits for a1's lock on f.txt")
      yield* probe.release("a1")
      yield* Deferred.await(probe.started("b1"))
      assert.notInclude(probe.overlaps.get("b1")!, "a1")
      yield* probe.release("b1")
      // The Bash is global: it waits for the parent's Read, which still runs.
      yield* askedFor("b2")
      yield* settle
      assert.isTrue(yield* notStarted("b2"), "b2 waits for p1")
      yield* probe.release("p1")
      yield* Deferred.await(probe.started("b2"))
      assert.deepStrictEqual(probe.overlaps.get("b2"), [])
      yield* probe.release("b2")

      const events = yield* Fiber.join(run)
      const own = events.filter((e) => e.origin === undefined)
      assert.deepStrictEqual(
        byType(own, "tool_return").map((r) => [r.tool_call_id, r.content]).sort(),
        [["p1", "output of p1"], ["tA", "A done"], ["tB", "B done"]]
      )
      assert.deepStrictEqual(probe.log.filter((e) => e.includes("a1") || e.includes("b1")), ["start a1", "end a1", "start b1", "end b1"])
      assert.isBelow(probe.log.indexOf("end p1"), probe.log.indexOf("start b2"))
      assert.deepStrictEqual(new Set(events.flatMap((e) => (e.origin !== undefined ? [e.origin.description] : []))), new Set(["A", "B"]))
    }).pipe(Effect.provide(routedLayer("memory", (request) => {
      if (!isChild(request)) {
        return Effect.succeed(
          step(request) === 0
            ? Turn.toolCalls([task("tA", "A", "A"), task("tB", "B", "B"), { id: "p1", name: "Read", args: { file_path: "g.txt" } }])
            : Turn.text("both done")
        )
      }
      if (firstUserText(request) === "A") {
        return Effect.succeed(step(request) === 0 ? Turn.toolCalls([{ id: "a1", name: "Edit", args: { file_path: "f.txt" } }]) : Turn.text("A done"))
      }
      const turns = [
        Turn.toolCalls([{ id: "b1", name: "Edit", args: { file_path: "f.txt" } }]),
        Turn.toolCalls([{ id: "b2", name: "Bash", args: { command: "true" } }]),
        Turn.text("B done")
      ]
      // Child B's first request waits until a1 runs, so b1 is called after a1: the order under test.
      return step(request) === 0 ? Effect.as(Deferred.await(probe.started("a1")), turns[0]!) : Effect.succeed(turns[step(request)]!)
    }, { tools: () => fakeTools(probe) }))), { timeout: 20_000 })
})

describe.each(["memory", "remote"] as const)("Subagents: interrupt (%s)", (kind) => {
  it.scopedLive("interrupting the parent during a child's 300 s Bash kills it; both conversations end paired", () =>
    Effect.gen(function*() {
      const ws = yield* Workspace
      const backend = yield* Backend
      const { approver } = recording()
      const session = yield* open({ approver })
      const seen: Array<TaskEvent> = []
      const fiber = yield* Effect.fork(Stream.runForEach(session.run("run it in a subagent"), (e) => Effect.sync(() => seen.push(e))))
      const pid = Number(yield* awaitFileText(Path.join(ws.dir, "bash.pid")))
      const childId = seen.find((e) => e.origin !== undefined)!.origin!.conversation_id
      yield* eventually(Effect.sync(() => seen.some((e) => e.origin !== undefined && e.type === "stop_reason")), "the child's model turn ended")
      yield* session.interrupt
      yield* Fiber.join(fiber)
      assert.isTrue(procGone(pid), "the child's shell is gone")
      const own = seen.filter((e) => e.origin === undefined)
      assert.deepStrictEqual(byType(own, "tool_return").map((r) => [r.tool_call_id, r.status]), [["t1", "interrupted"]])
      const paired = (id: typeof childId) =>
        Effect.gen(function*() {
          if ((yield* backend.pendingApprovals(id)).length > 0) return false
          const items = (yield* backend.history(id, { limit: 1000 })).map((s) => s.item)
          const answered = new Set(items.flatMap((i) => (i.type === "tool_return" ? [i.tool_call_id] : [])))
          return items.every((i) => i.type !== "tool_call" || answered.has(i.tool_call_id))
        })
      yield* eventually(paired(childId), "the child's carry-over recorded")
      yield* eventually(paired(session.conversationId), "the parent's carry-over recorded")
      const childItems = (yield* backend.history(childId, { limit: 1000 })).map((s) => s.item)
      assert.deepStrictEqual(byType(childItems, "tool_return").map((r) => [r.tool_call_id, r.status]), [["k1", "interrupted"]])
    }).pipe(Effect.provide(routedLayer(kind, (request) =>
      Effect.succeed(
        isChild(request)
          ? Turn.toolCalls([{ id: "k1", name: "Bash", args: { command: "echo $$ > bash.pid; sleep 300 & wait" } }])
          : Turn.toolCalls([task("t1", "long", "run the long command")])
      )))))
})

describe.each(["sqlite", "remote"] as const)("Subagents: crash and resume (%s)", (kind) => {
  it.scopedLive("resuming the parent re-attaches its pending Task call to the same child, which runs no committed tool again", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const taskTool = { name: "Task", description: "subagent", parameters: { type: "object" } }
      // What a process that died mid-subagent leaves: the parent waiting on t1, the child on k2,
      // the child's k1 committed as it finished (it ran once: runs.txt says so).
      const died = yield* Scope.make()
      const before = yield* Layer.buildWithScope(routedLayer(kind, (request) =>
        Effect.succeed(
          isChild(request)
            ? Turn.toolCalls([
              { id: "k1", name: "Bash", args: { command: "echo ran >> runs.txt" } },
              { id: "k2", name: "Read", args: { file_path: "notes.txt" } }
            ])
            : Turn.toolCalls([task("t1", "sub", "do the thing")])
        ), { root }), died)
      const { childId, parentId } = yield* Effect.gen(function*() {
        const backend = yield* Backend
        const ws = yield* Workspace
        Fs.writeFileSync(Path.join(ws.dir, "notes.txt"), "the notes\n")
        const parent = yield* backend.createConversation({ system_prompt: "parent", tools: [taskTool] })
        yield* collect(backend.send(parent.id, input(user("go"))))
        const link = { conversation_id: parent.id, tool_call_id: ToolCallId.make("t1") }
        const child = yield* backend.createConversation({ system_prompt: GENERAL_PURPOSE_PROMPT }, { title: "sub", parent: link })
        yield* collect(backend.send(child.id, input(user("do the thing"))))
        Fs.writeFileSync(Path.join(ws.dir, "runs.txt"), "ran\n")
        yield* backend.submitResult(child.id, toolResult("k1", "ran once"))
        assert.deepStrictEqual((yield* backend.pendingApprovals(child.id)).map((c) => c.tool_call_id), ["k2"])
        return { childId: child.id, parentId: parent.id }
      }).pipe(Effect.provide(before))
      yield* Scope.close(died, Exit.void)

      const after = yield* Layer.build(routedLayer(kind, (request) =>
        Effect.succeed(isChild(request) ? Turn.text("child answer") : Turn.text("parent done")), { root }))
      yield* Effect.gen(function*() {
        const backend = yield* Backend
        const ws = yield* Workspace
        const model = yield* Routed
        const { approver, asked } = recording()
        const session = yield* open({ conversationId: parentId, approver })
        const events = yield* collect(session.run([]))
        assert.deepStrictEqual(asked, ["t1", "sub:k2"])
        assert.isTrue(events.filter((e) => e.origin !== undefined).every((e) => e.origin!.conversation_id === childId), "the same child")
        assert.strictEqual(Fs.readFileSync(Path.join(ws.dir, "runs.txt"), "utf8"), "ran\n", "k1 never ran again")
        assert.isFalse(events.some((e) => e.type === "tool_return" && e.tool_call_id === "k1"))
        const childRequest = model.requests.find(isChild)!
        assert.deepStrictEqual(
          childRequest.history.flatMap((m) => (m.type === "tool_return" ? [[m.tool_call_id, m.content.includes("ran once") || m.content.includes("the notes")]] : [])),
          [["k1", true], ["k2", true]]
        )
        const parentLast = model.requests.filter((r) => !isChild(r)).at(-1)!.history.at(-1)!
        assert.deepStrictEqual(parentLast.type === "tool_return" && [parentLast.tool_call_id, parentLast.content], ["t1", "child answer"])
        const all = (yield* backend.listConversations({ limit: 500 })).items
        assert.deepStrictEqual(all.map((c) => c.id).sort(), [childId, parentId].sort(), "no second child")
        assert.deepStrictEqual(yield* backend.pendingApprovals(childId), [])
      }).pipe(Effect.provide(after))
    }))
})

describe("Subagents: a child that had finished", () => {
  it.scopedLive("resuming after the child answered but before its Task result was recorded: the answer is taken, the child is not run again", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const died = yield* Scope.make()
      const before = yield* Layer.buildWithScope(routedLayer("sqlite", (request) =>
        Effect.succeed(isChild(request) ? Turn.text("the answer, already given") : Turn.toolCalls([task("t1", "sub", "answer")])), { root }), died)
      const { childId, parentId } = yield* Effect.gen(function*() {
        const backend = yield* Backend
        const parent = yield* backend.createConversation({ system_prompt: "parent", tools: [{ name: "Task", description: "subagent", parameters: { type: "object" } }] })
        yield* collect(backend.send(parent.id, input(user("go"))))
        const child = yield* backend.createConversation({ system_prompt: GENERAL_PURPOSE_PROMPT }, {
          parent: { conversation_id: parent.id, tool_call_id: ToolCallId.make("t1") }
        })
        yield* collect(backend.send(child.id, input(user("answer"))))
        return { childId: child.id, parentId: parent.id }
      }).pipe(Effect.provide(before))
      yield* Scope.close(died, Exit.void)

      const after = yield* Layer.build(routedLayer("sqlite", () => Effect.succeed(Turn.text("parent done")), { root }))
      yield* Effect.gen(function*() {
        const model = yield* Routed
        const { approver } = recording()
        const session = yield* open({ conversationId: parentId, approver })
        const events = yield* collect(session.run([]))
        const result = byType(events, "tool_return")[0]!
        assert.deepStrictEqual([result.tool_call_id, result.status, result.content], ["t1", "success", "the answer, already given"])
        assert.strictEqual(model.requests.length, 1, "only the parent asked the model")
        assert.deepStrictEqual((yield* (yield* Backend).listConversations({ parent: parentId })).items.map((c) => c.id), [childId])
      }).pipe(Effect.provide(after))
    }))
})
