/**
 * Child process: `baton serve` on 127.0.0.1:0 over a local backend on the SQLite file argv[2], with a
 * scripted model (argv[3]: JSON turns, `{"text": [...]}` or `{"stall": "..."}`). Prints one JSON line
 * `{"url": …}` once it listens, then serves until killed.
 */
import { Effect, Layer } from "effect"
import { BatonServer, serve } from "../../src/programs/server/Server.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { layerScripted, Turn } from "../../src/services/provider/Scripted.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"

type TurnSpec = { readonly text: ReadonlyArray<string> } | { readonly stall: string }

const [filename, script] = process.argv.slice(2)
const turns = (JSON.parse(script ?? "[]") as ReadonlyArray<TurnSpec>).map((t) => ("stall" in t ? Turn.stall({ text: t.stall }) : Turn.text(t.text)))

const main = Effect.gen(function*() {
  const server = yield* BatonServer
  process.stdout.write(`${JSON.stringify({ url: server.url })}\n`)
  return yield* Effect.never
}).pipe(
  Effect.provide(serve({ port: 0 }).pipe(
    Layer.provide(layerLocal()),
    Layer.provide(layerScripted(turns)),
    Layer.provide(layerSqlite({ filename: filename! }))
  ))
)

Effect.runFork(main).addObserver((exit) => {
  if (exit._tag === "Failure") {
    process.stderr.write(`${String(exit.cause)}\n`)
    process.exit(1)
  }
})
