import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cliDirs, jsonEvents, runCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { runInPty } from "../support/ptyProcess.js"
import { byType } from "../support/sessionHarness.js"

/** `baton run` with a subagent (real processes, the mock model on the real wire), then `sessions list|show|fork`. */

const delegating = [
  Reply.toolCalls([{ id: "t1", name: "Task", args: { description: "read a", prompt: "what does a.txt say?" } }]),
  Reply.toolCalls([{ id: "k1", name: "Read", args: { file_path: "a.txt" } }]),
  Reply.text("a.txt says alpha"),
  Reply.text("The subagent found: alpha.")
]

describe("baton run with subagents, sessions list/show/fork (built CLI)", () => {
  it.scopedLive("--json: the child's events carry origin; the answer on stdout is the parent's; sessions show/list/fork see the lineage", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      Fs.writeFileSync(Path.join(dirs.workspace, "a.txt"), "alpha\n")
      const server = yield* MockModelServer.make({ replies: delegating })
      const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home }

      const run = yield* runCli(["run", "--json", "--approve", "allow", "-w", dirs.workspace, "use a subagent"], { env })
      assert.strictEqual(run.code, 0, run.stderr)
      const events = jsonEvents(run.stdout)
      const child = events.filter((e) => e.origin !== undefined)
      const own = events.filter((e) => e.origin === undefined)
      assert.isAbove(child.length, 5)
      const childId = child[0]!.origin!.conversation_id
      assert.isTrue(child.every((e) => e.origin!.tool_call_id === "t1" && e.origin!.description === "read a" && e.origin!.conversation_id === childId))
      assert.include(byType(child, "tool_return")[0]!.content, "alpha")
      assert.deepStrictEqual(byType(own, "tool_return").map((r) => [r.tool_call_id, r.content]), [["t1", "a.txt says alpha"]])
      assert.deepStrictEqual(byType(own, "assistant_message").map((m) => m.content), ["The subagent found: alpha."])
      const requests = yield* server.requests
      assert.include(requests[0]!.body, `"name":"Task"`)
      assert.notInclude(requests[1]!.body, `"name":"Task"`, "the child is not offered Task")
      assert.include(requests[3]!.body, "a.txt says alpha", "the parent's next request holds the child's answer")
      const parentId = (yield* runCli(["sessions", "list", "--json"], { env })).stdout.trim().split("\n")
        .map((l) => JSON.parse(l) as { readonly id: string; readonly parent?: { readonly conversation_id: string } })
      assert.deepStrictEqual(parentId.map((c) => c.parent?.conversation_id), [undefined, parentId[0]!.id], "the child right under its parent")
      assert.strictEqual(parentId[1]!.id, childId)

      const listed = (yield* runCli(["sessions", "list"], { env })).stdout.split("\n")
      assert.match(listed[0]!, new RegExp(`^${parentId[0]!.id} `))
      assert.match(listed[1]!, new RegExp(`^  ↳ ${childId} .*read a.*\\(Task t1\\)`))
      const all = (yield* runCli(["sessions", "list", "--all"], { env })).stdout
      assert.match(all, new RegExp(`^${childId} .*\\(subagent of ${parentId[0]!.id}, t1\\)`, "m"))

      const shown = (yield* runCli(["sessions", "show", parentId[0]!.id], { env })).stdout
      assert.include(shown, `Task t1 «read a» → ${childId}`)
      const lines = (yield* runCli(["sessions", "show", "--json", parentId[0]!.id], { env })).stdout.trim().split("\n")
        .map((l) => JSON.parse(l) as { readonly type: string; readonly position: number; readonly child_conversation_id?: string })
      assert.isTrue(lines.every((l) => Number.isInteger(l.position)))
      assert.strictEqual(lines.find((l) => l.type === "tool_call")!.child_conversation_id, childId)

      // A cut right after the Task call leaves it without its result: refused, nothing made.
      const call = lines.find((l) => l.type === "tool_call")!
      const refused = yield* runCli(["sessions", "fork", parentId[0]!.id, "--at", String(call.position)], { env })
      assert.strictEqual(refused.code, 2)
      assert.include(refused.stderr, "t1")
      const result = lines.find((l) => l.type === "tool_return")!
      const forked = yield* runCli(["sessions", "fork", parentId[0]!.id, "--at", String(result.position), "--json"], { env })
      assert.strictEqual(forked.code, 0, forked.stderr)
      const fork = JSON.parse(forked.stdout) as { readonly id: string; readonly forked_from: { readonly conversation_id: string; readonly at: number } }
      assert.deepStrictEqual(fork.forked_from, { conversation_id: parentId[0]!.id, at: result.position })
      const plain = yield* runCli(["sessions", "fork", parentId[0]!.id], { env })
      assert.match(plain.stdout, /^conv-\S+\n$/)
    }))

  it.scopedLive("the human view: the child's lines indented under the Task call on stderr, only the parent's answer on stdout", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      Fs.writeFileSync(Path.join(dirs.workspace, "a.txt"), "alpha\n")
      const server = yield* MockModelServer.make({ replies: delegating })
      const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home }
      const run = yield* runCli(["run", "--approve", "allow", "-w", dirs.workspace, "use a subagent"], { env })
      assert.strictEqual(run.code, 0, run.stderr)
      assert.strictEqual(run.stdout, "The subagent found: alpha.\n")
      assert.include(run.stderr, "↳ subagent «read a»")
      assert.match(run.stderr, /^ {4}│ .*a\.txt/m)
      assert.match(run.stderr, /^ {4}│ a\.txt says alpha$/m)
    }))

  it.scopedLive("chat: a subagent's question names it; /fork continues in a fork that holds the context so far", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      Fs.writeFileSync(Path.join(dirs.workspace, "a.txt"), "alpha\n")
      // A local model numbers its calls per conversation: the child's first call has the parent's id.
      const server = yield* MockModelServer.make({
        replies: [
          Reply.toolCalls([{ id: "call_1", name: "Task", args: { description: "read a", prompt: "what does a.txt say?" } }]),
          Reply.toolCalls([{ id: "call_1", name: "Read", args: { file_path: "a.txt" } }]),
          ...delegating.slice(2),
          Reply.text("Forked reply.")
        ]
      })
      const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home }
      const result = yield* runInPty(["chat", "--workspace", dirs.workspace], [
        { expect: "new conversation conv-" },
        { send: "use a subagent\r" },
        { expect: "Allow Task" },
        { send: "y\r" },
        { expect: "subagent «read a» wants to run Read a\\.txt" },
        { send: "y\r" },
        { expect: "The subagent found: alpha\\." },
        { send: "/fork\r" },
        { expect: "forked conv-\\S+ at position \\d+: continuing in conv-" },
        { send: "and now?\r" },
        { expect: "Forked reply\\." },
        { send: "/exit\r" },
        { wait_exit: true }
      ], env)
      assert.isTrue(result.ok, `${result.reason}\n${result.transcript}`)
      const requests = yield* server.requests
      assert.strictEqual(requests.length, 5)
      assert.include(requests[4]!.body, "a.txt says alpha", "the fork's context holds the Task result")
      assert.include(requests[4]!.body, "and now?")
      const listed = (yield* runCli(["sessions", "list", "--json"], { env })).stdout.trim().split("\n")
        .map((l) => JSON.parse(l) as { readonly forked_from?: { readonly conversation_id: string } })
      assert.isTrue(listed.some((c) => c.forked_from !== undefined))
    }))
})
