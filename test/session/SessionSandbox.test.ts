import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Decision } from "../../src/domain/Events.js"
import type { ApprovalRequest, Approver } from "../../src/programs/session/ApprovalGate.js"
import { open } from "../../src/programs/session/Session.js"
import { type ScriptEntry, Turn } from "../../src/services/provider/Scripted.js"
import { ToolExecutor } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import type { SandboxConfig } from "../../src/services/Sandbox.js"
import { requireBwrap } from "../support/sandbox.js"
import { backendLayer, byType, layerScriptedGated, storeLayer, Workspace } from "../support/sessionHarness.js"
import { tempDir } from "../support/tempDir.js"
import { collect } from "../support/testing.js"

/** Approvals with the sandbox: `Bash(sandboxed)` needs no question, `sandbox: false` always gets one. */

const sandboxLayer = (script: ReadonlyArray<ScriptEntry>, sandbox: (root: string) => SandboxConfig) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const root = yield* tempDir
    const workspace = Path.join(root, "ws")
    Fs.mkdirSync(workspace)
    const executor = yield* makeToolExecutor({ workspace, sandbox: sandbox(root) })
    return backendLayer("memory").pipe(
      Layer.provideMerge(layerScriptedGated(script)),
      Layer.provide(storeLayer("memory", root)),
      Layer.provideMerge(Layer.succeed(ToolExecutor, executor)),
      Layer.provideMerge(Layer.succeed(Workspace, { root, dir: workspace }))
    )
  }))

const recording = (answer: Decision) => {
  const asked: Array<ApprovalRequest> = []
  const approver: Approver = (request) => Effect.sync(() => (asked.push(request), answer))
  return { approver, asked }
}

const rules = (allow: ReadonlyArray<string>, deny: ReadonlyArray<string> = []) => ({ allow, ask: [], deny, additionalDirectories: [] })

describe.runIf(requireBwrap("test/session/SessionSandbox.test.ts"))("approvals with the sandbox on", () => {
  it.scopedLive("Bash(sandboxed) allows a sandboxed call without a question; sandbox: false is asked whatever the rules; a deny still denies", () =>
    Effect.gen(function*() {
      const ws = yield* Workspace
      const { approver, asked } = recording("allow")
      const session = yield* open({ approver, rules: rules(["Bash(sandboxed)", "Bash(echo:*)", "Read"], ["Bash(rm:*)"]) })
      const events = yield* collect(session.run("go"))
      const decisions = byType(events, "approval_decision").map((d) => [d.tool_call_id, d.decision, d.source, d.rule])
      assert.deepStrictEqual(decisions, [
        ["inside", "allow", "rule", "Bash(sandboxed)"],
        ["opaque", "allow", "rule", "Bash(sandboxed)"],
        ["outside", "allow", "user", undefined],
        ["removal", "deny", "rule", "Bash(rm:*)"]
      ])
      assert.deepStrictEqual(asked.map((r) => r.call.tool_call_id), ["outside"], "only the call outside the sandbox was asked")
      assert.include(asked[0]!.classification.reason, "outside the sandbox")
      assert.strictEqual(Fs.readFileSync(Path.join(ws.dir, "inside.txt"), "utf8"), "sandboxed\n")
      assert.isTrue(Fs.existsSync(Path.join(ws.dir, "keep.txt")), "the denied rm never ran")
    }).pipe(Effect.provide(sandboxLayer([
      Turn.toolCalls([
        { id: "inside", name: "Bash", args: { command: "echo sandboxed > inside.txt && touch keep.txt" } },
        { id: "opaque", name: "Bash", args: { command: "eval \"$(echo true)\"" } },
        { id: "outside", name: "Bash", args: { command: "echo outside", sandbox: false } },
        { id: "removal", name: "Bash", args: { command: "rm keep.txt" } }
      ]),
      Turn.text("done")
    ], (root) => ({ mode: "workspace-write", home: Path.join(root, "home") })))))
})

describe("approvals where no sandbox is available", () => {
  it.scopedLive("a mode the user chose: every Bash call is asked, and the question says why", () =>
    Effect.gen(function*() {
      const { approver, asked } = recording("deny")
      const session = yield* open({ approver, rules: rules(["Bash(sandboxed)", "Bash(echo:*)"]) })
      const events = yield* collect(session.run("go"))
      assert.deepStrictEqual(byType(events, "approval_decision").map((d) => [d.decision, d.source]), [["deny", "user"]])
      assert.deepStrictEqual(asked.map((r) => r.call.tool_call_id), ["c1"])
      assert.include(asked[0]!.classification.reason, "bwrap not found on PATH")
      assert.include(asked[0]!.classification.reason, "every command is asked")
    }).pipe(Effect.provide(sandboxLayer([
      Turn.toolCalls([{ id: "c1", name: "Bash", args: { command: "echo hi" } }]),
      Turn.text("done")
    ], (root) => ({ mode: "workspace-write", searchPath: root })))))

  it.scopedLive("the default mode: commands run as with off and the rules decide as before (the status says why)", () =>
    Effect.gen(function*() {
      const executor = yield* ToolExecutor
      assert.strictEqual(executor.sandbox?.mode, "off")
      assert.include(executor.sandbox?.unavailable, "bwrap not found")
      const { approver, asked } = recording("deny")
      const session = yield* open({ approver, rules: rules(["Bash(echo:*)"]) })
      const events = yield* collect(session.run("go"))
      assert.deepStrictEqual(byType(events, "approval_decision").map((d) => [d.decision, d.rule]), [["allow", "Bash(echo:*)"]])
      assert.deepStrictEqual(asked, [])
    }).pipe(Effect.provide(sandboxLayer([
      Turn.toolCalls([{ id: "c1", name: "Bash", args: { command: "echo hi" } }]),
      Turn.text("done")
    ], (root) => ({ mode: "workspace-write", fallback: true, searchPath: root })))))
})
