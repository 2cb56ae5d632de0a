import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { layerLocal } from "baton/BackendLocal"
import type { Provider } from "baton/Provider"
import { open } from "baton/Session"
import { cassetteRecorder, cassetteReplayer, memoryStore, scriptedModel, Turn } from "baton/testing"
import { layer as toolsLayer } from "baton/ToolExecutorLive"

// Record a task once (here from a scripted model; in your project, from a real one), then test
// against the recording: the same requests get the same answers, with no model and no network.
const workspace = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-example-"))
Fs.writeFileSync(Path.join(workspace, "notes.txt"), "ship on Friday\n")
const cassette = Path.join(workspace, "..", `${Path.basename(workspace)}.jsonl`)

const answer = <E>(model: Layer.Layer<Provider, E>) =>
  Effect.gen(function*() {
    const session = yield* open({ rules: { allow: ["Read"], ask: [], deny: [], additionalDirectories: [] } })
    const events = yield* Stream.runCollect(session.run("What do my notes say?"))
    return [...events].flatMap((event) => (event.type === "text_delta" ? [event.content] : [])).join("")
  }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(layerLocal().pipe(Layer.provide([memoryStore, model])), toolsLayer({ workspace }))))

it.live("a recorded task replays the same without its model", () =>
  Effect.gen(function*() {
    const live = scriptedModel([Turn.toolCalls([{ id: "call_1", name: "Read", args: { path: "notes.txt" } }]), Turn.text("Ship on Friday.")])
    const recorded = yield* answer(cassetteRecorder(cassette).pipe(Layer.provide([live, NodeFileSystem.layer])))
    const replayed = yield* answer(cassetteReplayer(cassette).pipe(Layer.provide(NodeFileSystem.layer)))
    assert.strictEqual(recorded, "Ship on Friday.")
    assert.strictEqual(replayed, recorded)
  }))
