import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer, Stream } from "effect"
import { layerLocal } from "baton/BackendLocal"
import { layerConfig } from "baton/ProviderConfig"
import { open } from "baton/Session"
import { layerSqlite } from "baton/StoreSqlite"
import { layer as toolsLayer } from "baton/ToolExecutorLive"

// Baton as ordinary Layers: the model from BATON_PROVIDER / BATON_MODEL / BATON_API_KEY, the
// conversations in a SQLite file, the built-in tools working in the current directory.
const BatonLive = Layer.mergeAll(
  layerLocal().pipe(Layer.provide([layerSqlite({ filename: "conversations.db" }), layerConfig])),
  toolsLayer({ workspace: process.cwd() })
)

const program = Effect.gen(function*() {
  // Rules decide every call here (no approver): reading is allowed, anything else is denied.
  const session = yield* open({ rules: { allow: ["Read", "Grep", "Glob", "LS"], ask: [], deny: [], additionalDirectories: [] } })
  yield* session.run(process.argv[2] ?? "Which files are in this directory?").pipe(
    Stream.runForEach((event) =>
      Effect.sync(() => {
        if (event.type === "text_delta") process.stdout.write(event.content)
        if (event.type === "tool_call") process.stderr.write(`[${event.name}] ${event.arguments}\n`)
      })
    )
  )
})

program.pipe(
  Effect.scoped,
  Effect.provide(BatonLive),
  // No model configured: one line saying what to set, not a stack trace.
  Effect.catchTag("ConfigError", (error) => Effect.sync(() => {
    process.stderr.write(`embed: ${error.message}\n`)
    process.exitCode = 2
  })),
  NodeRuntime.runMain
)
