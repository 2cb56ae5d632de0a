import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import { Sharding } from "@effect/cluster/Sharding"
import * as ShardId from "@effect/cluster/ShardId"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as PgClient from "@effect/sql-pg/PgClient"
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import type { StoreError } from "../../domain/Errors.js"
import type { Backend } from "../../services/Backend.js"
import type { Provider } from "../../services/Provider.js"
import * as PgTail from "../../services/store/PgTail.js"
import { layerWithClient } from "../../services/store/Pg.js"
import { layerCluster } from "../backend/BackendCluster.js"

/** Every runner of a cluster must use the same number. */
const SHARDS = 300

/** The cluster's own connections (one of them held for the shard locks), apart from the Store's pool. */
const CLUSTER_CONNECTIONS = 8

export interface RunnerOptions {
  /** The PostgreSQL database every runner of the cluster shares (Store, messages, shard locks). */
  readonly url: Redacted.Redacted<string> | string
  /** The address other runners reach this one at (`--runner-host` / `--runner-port`). */
  readonly host: string
  readonly port: number
  /** How long a lost runner's shards stay locked: the longest its conversations wait for a new owner. */
  readonly shardLockExpirationMs: number
}

/** What `GET /healthz` tells about this runner. */
export class RunnerStatus extends Context.Tag("baton/RunnerStatus")<RunnerStatus, {
  readonly address: string
  /** The shards this runner holds now (1…300), each a slice of the conversations. */
  readonly shards: Effect.Effect<ReadonlyArray<number>>
}>() {}

/**
 * The timings of a runner, scaled to the lock expiry: a lost runner's shards are free once its lock
 * expires, the others see that within a fraction of it, and the new owner reads the lost runner's
 * undelivered requests (its runs' Drives) as soon as it holds the shard.
 */
const shardingConfig = (options: RunnerOptions) => {
  const expiry = Math.max(1_000, options.shardLockExpirationMs)
  const fraction = (divisor: number, floor: number, cap: number) => Duration.millis(Math.min(cap, Math.max(floor, Math.round(expiry / divisor))))
  return {
    // Given explicitly: the cluster would otherwise read a stray PORT / HOST from the environment.
    runnerAddress: Option.some(RunnerAddress.make(options.host, options.port)),
    shardsPerGroup: SHARDS,
    shardLockExpiration: Duration.millis(expiry),
    // Also how long a refresh may take: one that takes longer gives up every shard at once (every run
    // in flight reconnects), so a runner whose event loop is held up by load must not lose its shards
    // while its lock is still good for half its term. Refreshed at half the term, it still never lapses.
    shardLockRefreshInterval: fraction(2, 250, 10_000),
    refreshAssignmentsInterval: fraction(10, 100, 3_000),
    entityMessagePollInterval: fraction(5, 200, 10_000),
    runnerHealthCheckInterval: fraction(2, 500, 60_000),
    // A Drive waits for its whole run: at shutdown it is handed over at once, not waited for.
    entityTerminationTimeout: Duration.millis(100)
  }
}

/**
 * The cluster's tables, created by one runner at a time: runners started together on a new database
 * would otherwise race on the same CREATE TABLEs. An advisory lock (per schema) orders them; the
 * ones that come second find the tables made.
 */
const clusterTables = (config: ReturnType<typeof shardingConfig>): Layer.Layer<never, never, SqlClient> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const sql = yield* SqlClient
    // A session lock on a connection of its own: the cluster's migrations expect to fail and go on,
    // which a transaction around them would not survive.
    const lock = yield* sql.reserve
    const key = "hashtext('baton_cluster_tables:' || coalesce(current_schema(), ''))"
    yield* lock.executeRaw(`SELECT pg_advisory_lock(${key})`, [])
    yield* Effect.scoped(Layer.build(Layer.merge(SqlMessageStorage.layer, SqlRunnerStorage.layer).pipe(Layer.provide(ShardingConfig.layer(config)))))
    yield* lock.executeRaw(`SELECT pg_advisory_unlock(${key})`, [])
  }).pipe(Effect.scoped, Effect.orDie))

/**
 * One runner of `baton serve --cluster`: the clustered backend over a Store on PostgreSQL, the
 * cluster's message storage, runner registry and shard locks (advisory locks: the database must be
 * reached with session pooling) in the same database, runners talking over TCP.
 */
export const layerRunner = (options: RunnerOptions): Layer.Layer<Backend | RunnerStatus, StoreError, Provider> => {
  const address = `${options.host}:${options.port}`
  const status = Layer.effect(RunnerStatus, Effect.map(Sharding, (sharding) =>
    RunnerStatus.of({
      address,
      shards: Effect.sync(() => Array.from({ length: SHARDS }, (_, i) => i + 1).filter((id) => sharding.hasShardId(ShardId.make("default", id))))
    })))
  const config = shardingConfig(options)
  // A pool of the cluster's own: when the Store's is busy with commits and followers' reads, the
  // cluster still re-takes its shard locks, resets a re-taken shard's requests for delivery (a step
  // it gives up on after a lock interval, leaving them undelivered for minutes) and reads them.
  const clusterSql = PgClient.layer({
    url: Redacted.isRedacted(options.url) ? options.url : Redacted.make(options.url),
    applicationName: "baton-cluster",
    connectTimeout: "10 seconds",
    idleTimeout: "5 minutes",
    maxConnections: CLUSTER_CONNECTIONS
  })
  const cluster = NodeClusterSocket.layer({ storage: "sql", shardingConfig: config }).pipe(
    Layer.provide(clusterTables(config)),
    Layer.provide(clusterSql),
    // A listen failure, a bad config or an unreachable database is the runner's start failing: logged with its cause.
    Layer.orDie
  )
  // A run whose Drive the cluster read but skipped is resumed within two lock expiries, not ten minutes.
  return Layer.merge(layerCluster({ runner: address, sweepEvery: config.shardLockExpiration }), status).pipe(
    Layer.provide(Layer.merge(cluster, PgTail.layer)),
    Layer.provide(layerWithClient({ url: options.url }))
  )
}
