import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, Layer, Stream } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { Approver } from "baton/Approval"
import { layerLocal } from "baton/BackendLocal"
import { open } from "baton/Session"
import { memoryStore, scriptedModel, Turn } from "baton/testing"
import { layer as toolsLayer } from "baton/ToolExecutorLive"

// One task with no network: a scripted model asks to read a file and to delete it, an approver
// allows the read and refuses the deletion, and the model answers from what it read.
const workspace = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-example-"))
Fs.writeFileSync(Path.join(workspace, "notes.txt"), "ship on Friday\n")

const model = scriptedModel([
  Turn.toolCalls([
    { id: "call_1", name: "Read", args: { path: "notes.txt" } },
    { id: "call_2", name: "Bash", args: { command: "rm notes.txt" } }
  ]),
  Turn.text("The notes say to ship on Friday; I left the file in place.")
])

// Backend ← Store + Provider; the tools work in `workspace`.
const BatonTest = Layer.mergeAll(layerLocal().pipe(Layer.provide([memoryStore, model])), toolsLayer({ workspace }))

// Asked for every call the rules leave open (no rules here: every call).
const approver: Approver = ({ call }) => {
  const decision = call.name === "Read" ? "allow" : "deny"
  return Console.error(`[${call.name}] ${call.arguments} → ${decision}`).pipe(Effect.as(decision))
}

const program = Effect.gen(function*() {
  const session = yield* open({ approver })
  yield* session.run("What do my notes say?").pipe(
    Stream.runForEach((event) => (event.type === "text_delta" ? Effect.sync(() => process.stdout.write(event.content)) : Effect.void))
  )
  process.stdout.write("\n")
  if (!Fs.existsSync(Path.join(workspace, "notes.txt"))) return yield* Effect.dieMessage("the denied call ran")
})

program.pipe(Effect.scoped, Effect.provide(BatonTest), NodeRuntime.runMain)
