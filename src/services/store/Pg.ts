import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Effect, Layer } from "effect"
import type { StoreError } from "../../domain/Errors.js"
import { openDatabase, type PgOptions } from "./pg/Open.js"
import { makePgStore } from "./pg/PgStore.js"
import { CHANNEL } from "./PgTail.js"
import { Store } from "../Store.js"

export type { PgOptions }

/**
 * The Store on a PostgreSQL database (14 or newer) that several Baton processes, on one machine or
 * many, can share: the database keeps the rules (one running run per conversation, contiguous chunk
 * seqs), not a lock in any one process. Its tables are created on first use, in the first schema of
 * the URL's search_path. An unreachable server, refused credentials, a database that is not Baton's
 * or has a newer schema fail the layer with a StoreError naming the database without its password.
 */
export const layer = (options: PgOptions): Layer.Layer<Store, StoreError> =>
  Layer.scoped(Store, Effect.flatMap(openDatabase(options), ({ sql, target }) => makePgStore(sql, target)))

/**
 * The Store and its connection pool, for what shares the database with it: a cluster's runner
 * storage and shard locks (`baton serve --cluster`), and its LISTEN/NOTIFY run tail (PgTail.ts),
 * whose notices this Store sends inside each commit.
 */
export const layerWithClient = (options: PgOptions): Layer.Layer<Store | PgClient.PgClient | SqlClient.SqlClient, StoreError> =>
  Layer.scopedContext(Effect.flatMap(openDatabase(options), ({ sql, target }) =>
    Effect.map(makePgStore(sql, target, { announce: CHANNEL }), (store) =>
      Context.make(Store, store).pipe(Context.add(PgClient.PgClient, sql), Context.add(SqlClient.SqlClient, sql)))))
