import { Effect, Layer } from "effect"
import * as Path from "node:path"
import { BatonServer, serve } from "../../src/programs/server/Server.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { layerRemote } from "../../src/services/backend/Remote.js"
import { layerScripted, type ScriptEntry } from "../../src/services/provider/Scripted.js"
import type { Store } from "../../src/services/Store.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import { backendContract } from "../support/backendContract.js"
import { tempDir } from "../support/tempDir.js"

/**
 * The remote backend talking to `baton serve` over a local backend. The server runs in the test's
 * runtime (real sockets on 127.0.0.1, port 0), so the runs behind it share the test clock.
 */
const remoteOver = (store: Layer.Layer<Store, unknown>) => (script: ReadonlyArray<ScriptEntry>) =>
  Layer.unwrapEffect(Effect.map(BatonServer, (server) => layerRemote({ url: server.url }))).pipe(
    Layer.provide(serve({ port: 0, drainTimeoutMs: 1_000 })),
    Layer.provide(layerLocal()),
    Layer.provide(store),
    Layer.provideMerge(layerScripted(script))
  )

backendContract("remote over HTTP (StoreMemory behind the server)", remoteOver(layerMemory))

const sqliteFile = Layer.unwrapScoped(Effect.map(tempDir, (dir) => layerSqlite({ filename: Path.join(dir, "baton.db") })))

backendContract("remote over HTTP (StoreSqlite behind the server)", remoteOver(sqliteFile))
