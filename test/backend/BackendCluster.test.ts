import * as SingleRunner from "@effect/cluster/SingleRunner"
import { Clock, Effect, Layer } from "effect"
import { layerCluster } from "../../src/programs/backend/BackendCluster.js"
import { layerScripted } from "../../src/services/provider/Scripted.js"
import * as PgTail from "../../src/services/store/PgTail.js"
import { layerWithClient } from "../../src/services/store/Pg.js"
import { backendContract } from "../support/backendContract.js"
import { freshSchema, onPostgres } from "../support/pgDatabase.js"

/**
 * The clustered backend (`serve --cluster`) on one runner over PostgreSQL: every command goes
 * through the Conversation entity's persisted RPCs and the cluster's own message storage. Its
 * machinery runs on the real clock; the runs the entity starts keep the test's.
 */
const oneRunner = Layer.scopedContext(
  Effect.gen(function*() {
    const { url } = yield* freshSchema
    return yield* Layer.build(
      Layer.mergeAll(SingleRunner.layer({ runnerStorage: "memory", shardingConfig: { entityMessagePollInterval: "1 second" } }), PgTail.layer).pipe(
        Layer.provideMerge(layerWithClient({ url }))
      )
    )
  }).pipe(Effect.withClock(Clock.make()))
)

onPostgres("Backend contract: clustered over StorePg", () =>
  backendContract("clustered over StorePg (one runner)", (script) =>
    layerCluster({ runner: "127.0.0.1:0" }).pipe(Layer.provideMerge(layerScripted(script)), Layer.provide(oneRunner))))
