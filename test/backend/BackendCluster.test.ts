import { Layer } from "effect"
import { layerCluster } from "../../src/programs/backend/BackendCluster.js"
import { layerScripted } from "../../src/services/provider/Scripted.js"
import { backendContract } from "../support/backendContract.js"
import { oneRunner } from "../support/oneRunner.js"
import { onPostgres } from "../support/pgDatabase.js"

/**
 * The clustered backend (`serve --cluster`) on one runner over PostgreSQL: every command goes
 * through the Conversation entity's persisted RPCs and the cluster's own message storage. Its
 * machinery runs on the real clock; the runs the entity starts keep the test's.
 */
onPostgres("Backend contract: clustered over StorePg", () =>
  backendContract("clustered over StorePg (one runner)", (script) =>
    layerCluster({ runner: "127.0.0.1:0" }).pipe(Layer.provideMerge(layerScripted(script)), Layer.provide(oneRunner))))
