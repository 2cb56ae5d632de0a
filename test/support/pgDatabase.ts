import { describe, it } from "@effect/vitest"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Clock, Effect, Layer, Redacted } from "effect"
import { randomUUID } from "node:crypto"
import type { StoreError } from "../../src/domain/Errors.js"
import { layer as layerPg } from "../../src/services/store/Pg.js"
import type { Store } from "../../src/services/Store.js"

/**
 * The PostgreSQL the suites run on: BATON_TEST_DATABASE_URL names a database this user may create
 * schemas in (`scripts/with-postgres.sh` starts a throwaway one and sets it; `.ci/run` does). Without
 * it the PostgreSQL suites are skipped, and say so.
 */
export const TEST_DATABASE_URL = process.env["BATON_TEST_DATABASE_URL"]

export const SKIPPED =
  "skipped: BATON_TEST_DATABASE_URL is not set (run `scripts/with-postgres.sh npx vitest run …` to run the PostgreSQL suites)"

/** Registers `suite` when a test database is set; otherwise one skipped test under `name` that says why. */
export const onPostgres = (name: string, suite: (url: string) => void) => {
  if (TEST_DATABASE_URL !== undefined && TEST_DATABASE_URL !== "") suite(TEST_DATABASE_URL)
  else describe(name, () => it.skip(SKIPPED, () => {}))
}

const requireUrl = (): string => {
  if (TEST_DATABASE_URL === undefined || TEST_DATABASE_URL === "") throw new Error("BATON_TEST_DATABASE_URL is not set")
  return TEST_DATABASE_URL
}

/** The URL with its search_path set to one schema: everything Baton creates goes there. */
export const urlWithSchema = (url: string, schema: string): string => {
  const parsed = new URL(url)
  parsed.searchParams.set("options", `-c search_path=${schema}`)
  return parsed.toString()
}

/** A client of the test database itself (outside any test schema), for set-up and inspection. */
export const adminClient = (url = requireUrl()) =>
  PgClient.make({ url: Redacted.make(url) }).pipe(Effect.provide(Reactivity.layer), Effect.orDie)

/**
 * A schema of its own for one test, created now and dropped with everything in it when the scope
 * closes (after the stores built on it, which close first); answers the URL that selects it.
 */
export const freshSchema = Effect.gen(function*() {
  const url = requireUrl()
  const admin = yield* adminClient(url)
  const schema = `baton_test_${randomUUID().replaceAll("-", "").slice(0, 16)}`
  yield* Effect.acquireRelease(
    admin`CREATE SCHEMA ${admin(schema)}`.pipe(Effect.orDie),
    () => admin`DROP SCHEMA ${admin(schema)} CASCADE`.pipe(Effect.orDie)
  )
  return { url: urlWithSchema(url, schema), schema, admin }
})

/**
 * The PostgreSQL Store in a fresh schema, for one test. Its connections are made on the real clock:
 * the driver's connect timeout would otherwise leave a sleep in a TestClock's list (an interrupted
 * sleep stays there), and tests that wait for a fiber to start sleeping would see it.
 */
export const pgStore: Layer.Layer<Store, StoreError> = Layer.scopedContext(
  Effect.gen(function*() {
    const { url } = yield* freshSchema
    return yield* Layer.build(layerPg({ url }))
  }).pipe(Effect.withClock(Clock.make()))
)
