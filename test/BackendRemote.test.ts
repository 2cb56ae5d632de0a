import { Effect, Layer } from "effect"
import { BatonServer, serve } from "../src/programs/Server.js"
import { layerLocal } from "../src/services/BackendLocal.js"
import { layerRemote } from "../src/services/BackendRemote.js"
import { layerScripted } from "../src/services/ProviderScripted.js"
import { layerMemory } from "../src/services/StoreMemory.js"
import { backendContract } from "./support/backendContract.js"

// The server runs in the test's runtime (real sockets on 127.0.0.1, port 0), so runs share the test clock.
backendContract("remote over HTTP (local backend, StoreMemory)", (script) =>
  Layer.unwrapEffect(Effect.map(BatonServer, (server) => layerRemote({ url: server.url }))).pipe(
    Layer.provide(serve({ port: 0, drainTimeoutMs: 1_000 })),
    Layer.provide(layerLocal()),
    Layer.provide(layerMemory),
    Layer.provideMerge(layerScripted(script))
  ))
