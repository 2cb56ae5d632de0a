import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer, Stream } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { layerLocal } from "baton/BackendLocal"
import { layerRemote } from "baton/BackendRemote"
import { BatonServer, serve } from "baton/Server"
import { open } from "baton/Session"
import { memoryStore, scriptedModel, Turn } from "baton/testing"
import { layer as toolsLayer } from "baton/ToolExecutorLive"

// A Session over a remote backend. The server side (what `baton serve` runs) starts here on a free
// loopback port with a scripted model; point `layerRemote` at your own server's URL instead.
// The conversations and the model live on the server; the tools run here, on the client.
const ServerLive = serve({ port: 0 }).pipe(
  Layer.provide(layerLocal()),
  Layer.provide([memoryStore, scriptedModel([Turn.toolCalls([{ id: "call_1", name: "LS", args: { path: "." } }]), Turn.text("One file: hello.txt.")])])
)

const workspace = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-example-"))
Fs.writeFileSync(Path.join(workspace, "hello.txt"), "hello\n")

const client = Effect.gen(function*() {
  const session = yield* open({ rules: { allow: ["LS"], ask: [], deny: [], additionalDirectories: [] } })
  yield* session.run("Which files are here?").pipe(
    Stream.runForEach((event) => (event.type === "text_delta" ? Effect.sync(() => process.stdout.write(event.content)) : Effect.void))
  )
  process.stdout.write("\n")
})

const program = Effect.gen(function*() {
  const server = yield* BatonServer
  process.stderr.write(`server at ${server.url}\n`)
  yield* client.pipe(Effect.scoped, Effect.provide(Layer.mergeAll(layerRemote({ url: server.url }), toolsLayer({ workspace }))))
})

program.pipe(Effect.provide(ServerLive), NodeRuntime.runMain)
