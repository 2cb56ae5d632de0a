import * as SingleRunner from "@effect/cluster/SingleRunner"
import { Clock, Effect, Layer } from "effect"
import * as PgTail from "../../src/services/store/PgTail.js"
import { layerWithClient } from "../../src/services/store/Pg.js"
import { freshSchema } from "./pgDatabase.js"

/**
 * One cluster runner over a fresh PostgreSQL schema, with the Store on the same database. Its
 * machinery runs on the real clock; the runs a backend over it starts keep the test's.
 */
export const oneRunner = Layer.scopedContext(
  Effect.gen(function*() {
    const { url } = yield* freshSchema
    return yield* Layer.build(
      Layer.mergeAll(SingleRunner.layer({ runnerStorage: "memory", shardingConfig: { entityMessagePollInterval: "1 second" } }), PgTail.layer).pipe(
        Layer.provideMerge(layerWithClient({ url }))
      )
    )
  }).pipe(Effect.withClock(Clock.make()))
)
