import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted } from "effect"
import * as Net from "node:net"
import { StoreError } from "../../src/domain/Errors.js"
import { layer as layerPg } from "../../src/services/store/Pg.js"
import { supportedServer } from "../../src/services/store/pg/Open.js"
import { SCHEMA_VERSION } from "../../src/services/store/pg/Schema.js"
import { redactUrl, scrubber } from "../../src/services/store/pg/Url.js"
import { Store } from "../../src/services/Store.js"
import { freshSchema, onPostgres, urlWithSchema } from "../support/pgDatabase.js"

const open = (url: string) => Effect.scoped(Effect.flatMap(Layer.build(layerPg({ url })), (ctx) => Effect.succeed(ctx)))

const refusal = (url: string) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(open(url))
    assert.isTrue(Exit.isFailure(exit), "the layer fails")
    const error = yield* Effect.flip(open(url))
    assert.instanceOf(error, StoreError)
    return error
  })

const freePort = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const server = Net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resolve(port))
    })
  }))

describe("StorePg start-up", () => {
  // The pool waits up to a minute for a free connection (a burst of sends waits, not fails); a
  // server that takes the connection and never answers is still told at start-up, within 10 s.
  it.live("a server that accepts and never answers: a StoreError within the start-up bound, not the pool wait", () =>
    Effect.gen(function*() {
      const sockets: Array<Net.Socket> = []
      const silent = yield* Effect.acquireRelease(
        Effect.async<Net.Server>((resume) => {
          const server = Net.createServer((socket) => void sockets.push(socket)).listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) => Effect.sync(() => {
          for (const socket of sockets) socket.destroy()
          server.close()
        })
      )
      const { port } = silent.address() as Net.AddressInfo
      const error = yield* Effect.flip(open(`postgres://baton:hunter22@127.0.0.1:${port}/baton`))
      assert.instanceOf(error, StoreError)
      assert.match(error.message, /check that it runs/)
      assert.notInclude(JSON.stringify(error), "hunter22")
    }).pipe(Effect.scoped), 40_000)
})

describe("StorePg URLs", () => {
  it("a password is never shown: the URL's, a query parameter's, or anything that does not parse", () => {
    assert.strictEqual(redactUrl("postgres://baton:s3cret@db.example:5433/baton"), "postgres://baton:***@db.example:5433/baton")
    assert.strictEqual(redactUrl("postgresql://baton@db/baton?sslmode=require"), "postgresql://baton@db/baton?sslmode=require")
    assert.notInclude(redactUrl("postgres://db/baton?user=u&password=hunter22"), "hunter22")
    assert.notInclude(redactUrl("postgres://u:p%40ss@db/x"), "p%40ss")
    assert.notInclude(redactUrl("host=db password=hunter22"), "hunter22")
    assert.strictEqual(
      redactUrl("postgres://u:pw@h/db?options=-c%20search_path%3Dbaton&sslpassword=x"),
      "postgres://u:***@h/db?options=-c search_path=baton&sslpassword=***"
    )
    const scrub = scrubber("postgres://baton:s3cret@db/baton")
    assert.strictEqual(scrub("failed for postgres://baton:s3cret@db/baton: s3cret"), "failed for postgres://baton:***@db/baton: ***")
  })

  it("PostgreSQL 14 and newer are accepted", () => {
    assert.deepStrictEqual([130012, 140000, 150018, 170001].map(supportedServer), [false, true, true, true])
  })
})

onPostgres("StorePg opening", (url) => {
  const parsed = new URL(url)
  const password = decodeURIComponent(parsed.password)

  it.live("refused credentials: a StoreError naming the database, with no password in it", () =>
    Effect.gen(function*() {
      const wrong = new URL(url)
      wrong.password = "not-the-password"
      const error = yield* refusal(wrong.toString())
      assert.match(error.message, /refused the credentials/)
      assert.include(error.message, `${parsed.hostname}:${parsed.port}`)
      for (const secret of ["not-the-password", password]) assert.notInclude(JSON.stringify(error), secret)
      const none = new URL(url)
      none.password = ""
      const missing = yield* refusal(none.toString())
      assert.match(missing.message, /asks for a password and none was given: put it in the URL, in PGPASSWORD or in ~\/.pgpass/)
    }))

  it.live("nothing listening, or no such database: a StoreError saying which and what to check", () =>
    Effect.gen(function*() {
      const down = new URL(url)
      down.port = String(yield* freePort)
      const unreachable = yield* refusal(down.toString())
      assert.match(unreachable.message, /is not reachable .*check that it runs/)
      assert.notInclude(JSON.stringify(unreachable), password)
      const missing = new URL(url)
      missing.pathname = "/no_such_database"
      const noDatabase = yield* refusal(missing.toString())
      assert.match(noDatabase.message, /no_such_database.*does not exist.*createdb/)
      const noSchema = yield* refusal(urlWithSchema(url, "no_such_schema"))
      assert.match(noSchema.message, /search_path names no schema that exists/)
    }))

  it.live("a schema holding someone else's tables is refused and left as it was", () =>
    Effect.gen(function*() {
      const { url: schemaUrl, schema, admin } = yield* freshSchema
      yield* admin`CREATE TABLE ${admin(schema)}.items (x integer)`
      yield* admin`INSERT INTO ${admin(schema)}.items VALUES (42)`
      const error = yield* refusal(schemaUrl)
      assert.strictEqual(error.reason, "corrupt")
      assert.match(error.message, /tables Baton did not create \(items\)/)
      const tables = yield* admin<{ readonly name: string }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ${schema}`
      assert.deepStrictEqual(tables.map((t) => t.name), ["items"])
      assert.deepStrictEqual(yield* admin`SELECT x FROM ${admin(schema)}.items`, [{ x: 42 }])
    }).pipe(Effect.scoped))

  it.live("a schema a newer Baton migrated is refused and left as it was", () =>
    Effect.gen(function*() {
      const { url: schemaUrl, schema, admin } = yield* freshSchema
      yield* open(schemaUrl)
      yield* admin`INSERT INTO ${admin(schema)}.baton_migrations (migration_id, name) VALUES (${SCHEMA_VERSION + 1}, 'future')`
      const error = yield* refusal(schemaUrl)
      assert.strictEqual(error.reason, "newer_schema")
      assert.match(error.message, new RegExp(`schema version ${SCHEMA_VERSION + 1}; this Baton knows up to ${SCHEMA_VERSION}`))
      const versions = yield* admin<{ readonly id: number }>`SELECT migration_id AS id FROM ${admin(schema)}.baton_migrations ORDER BY 1`
      assert.deepStrictEqual(versions.map((v) => v.id), [...Array.from({ length: SCHEMA_VERSION }, (_, k) => k + 1), SCHEMA_VERSION + 1])
    }).pipe(Effect.scoped))

  it.live("processes opening a fresh database together migrate it once; a reopened store keeps everything", () =>
    Effect.gen(function*() {
      const { url: schemaUrl, schema, admin } = yield* freshSchema
      yield* Effect.all(Array.from({ length: 4 }, () => open(schemaUrl)), { concurrency: "unbounded" })
      const versions = yield* admin<{ readonly id: number }>`SELECT migration_id AS id FROM ${admin(schema)}.baton_migrations`
      assert.deepStrictEqual(versions.map((v) => v.id), Array.from({ length: SCHEMA_VERSION }, (_, k) => k + 1))
      const created = yield* Effect.scoped(Effect.flatMap(Store, (s) => s.createConversation({}, { title: "kept" })).pipe(
        Effect.provide(layerPg({ url: Redacted.make(schemaUrl) }))
      ))
      const again = yield* Effect.scoped(Effect.flatMap(Store, (s) => s.getConversation(created.id)).pipe(Effect.provide(layerPg({ url: schemaUrl }))))
      assert.deepStrictEqual(again, created)
    }).pipe(Effect.scoped))
})

