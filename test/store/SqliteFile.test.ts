import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Otid } from "../../src/domain/Ids.js"
import { openDatabase } from "../../src/services/store/sqlite/Open.js"
import { APPLICATION_ID, MIGRATIONS_TABLE, SCHEMA_VERSION } from "../../src/services/store/sqlite/Schema.js"
import { Store } from "../../src/services/Store.js"
import { defaultFilename, layerDefault, layerSqlite } from "../../src/services/store/Sqlite.js"
import { append, call, chunk, readAll, user } from "../support/contract/fixtures.js"
import { rawSqlite } from "../support/sqliteFiles.js"
import { tempDir } from "../support/tempDir.js"

const mode = (file: string) => Fs.statSync(file).mode & 0o777

const pragma = (sql: SqlClient, name: string) =>
  Effect.map(sql.unsafe<Record<string, unknown>>(`PRAGMA ${name}`), (rows) => Object.values(rows[0] ?? {})[0])

describe("StoreSqlite file", () => {
  it.scoped("layerDefault creates $BATON_HOME/baton.db owner-only on first use", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const home = Path.join(dir, "nested", "home")
      const layer = layerDefault.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["BATON_HOME", home]])))))
      yield* Effect.gen(function*() {
        const store = yield* Store
        const c = yield* store.createConversation({})
        yield* append(c.id, user("hello"))
        const file = Path.join(home, "baton.db")
        assert.strictEqual(mode(home), 0o700)
        assert.strictEqual(mode(Path.join(dir, "nested")), 0o700)
        assert.strictEqual(mode(file), 0o600)
        // SQLite gives the WAL and shared-memory files the database file's permissions.
        for (const side of ["-wal", "-shm"]) assert.strictEqual(mode(file + side), 0o600)
      }).pipe(Effect.provide(layer))
    }))

  it.effect("BATON_HOME defaults to ~/.baton", () =>
    Effect.gen(function*() {
      const file = yield* defaultFilename.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))
      assert.strictEqual(file, Path.join(Os.homedir(), ".baton", "baton.db"))
    }))

  it.scoped("data survives closing and reopening the file", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const layer = layerSqlite({ filename: Path.join(dir, "baton.db") })
      const written = yield* Effect.gen(function*() {
        const store = yield* Store
        const c = yield* store.createConversation({ system_prompt: "p" }, { title: "kept" })
        const items = yield* append(c.id, user("u1"), call("t1"))
        const { run } = yield* store.createRun(c.id, Otid.make("o1"), "turn")
        yield* store.commit({ conversationId: c.id, chunks: [chunk(run.id, 1), chunk(run.id, 2)] })
        return { c, items, run: yield* store.getRun(run.id) }
      }).pipe(Effect.provide(layer))
      yield* Effect.gen(function*() {
        const store = yield* Store
        assert.deepStrictEqual(yield* store.getConversation(written.c.id), { ...written.c, updated_at: written.run.updatedAt })
        assert.deepStrictEqual(yield* store.listItems(written.c.id), written.items)
        assert.deepStrictEqual(yield* store.getRun(written.run.id), written.run)
        assert.deepStrictEqual((yield* readAll(written.run.id)).map((x) => x.seq), [1, 2])
        assert.deepStrictEqual((yield* store.pendingApprovals(written.c.id)).map((x) => x.tool_call_id), ["t1"])
      }).pipe(Effect.provide(layer))
    }))

  it.scoped("the connection runs WAL, synchronous set explicitly, busy timeout, foreign keys; the schema version is recorded", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = Path.join(dir, "baton.db")
      // A new file would default to FULL and a reopened one to NORMAL: check both opens.
      for (let open = 0; open < 2; open++) {
        yield* Effect.scoped(Effect.gen(function*() {
          const sql = yield* openDatabase({ filename })
          assert.strictEqual(yield* pragma(sql, "journal_mode"), "wal")
          assert.strictEqual(yield* pragma(sql, "synchronous"), 1)
          assert.strictEqual(yield* pragma(sql, "busy_timeout"), 5000)
          assert.strictEqual(yield* pragma(sql, "foreign_keys"), 1)
          assert.strictEqual(yield* pragma(sql, "application_id"), APPLICATION_ID)
          assert.strictEqual(yield* pragma(sql, "user_version"), SCHEMA_VERSION)
          const migrations = yield* sql.unsafe<{ readonly migration_id: number }>(`SELECT migration_id FROM ${MIGRATIONS_TABLE}`)
          assert.deepStrictEqual(migrations.map((m) => m.migration_id), Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1))
        }))
      }
      const full = yield* Effect.scoped(Effect.flatMap(openDatabase({ filename, synchronous: "full" }), (sql) => pragma(sql, "synchronous")))
      assert.strictEqual(full, 2)
    }))

  it.scoped("a write blocked by another connection's lock fails after the busy timeout, keeps nothing, then succeeds", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = Path.join(dir, "baton.db")
      yield* Effect.gen(function*() {
        const store = yield* Store
        const c = yield* store.createConversation({})
        yield* append(c.id, user("before"))
        const other = yield* rawSqlite(filename)
        yield* other.unsafe("BEGIN IMMEDIATE")
        const blocked = yield* Effect.flip(append(c.id, user("blocked"), user("blocked too")))
        assert.strictEqual(blocked._tag, "StoreError")
        if (blocked._tag === "StoreError") {
          assert.deepStrictEqual([blocked.reason, blocked.path], ["io", filename])
          assert.match(blocked.message, /locked by another process/)
        }
        yield* other.unsafe("ROLLBACK")
        const after = yield* append(c.id, user("after"))
        assert.deepStrictEqual(after.map((i) => i.position), [2])
        assert.strictEqual((yield* store.listItems(c.id)).length, 2)
      }).pipe(Effect.provide(layerSqlite({ filename, busyTimeoutMs: 50 })))
    }))

  it.effect("a store used after its layer closed fails with StoreError(closed)", () =>
    Effect.gen(function*() {
      const store = yield* Effect.scoped(Effect.gen(function*() {
        const dir = yield* tempDir
        const context = yield* Layer.build(layerSqlite({ filename: Path.join(dir, "baton.db") }))
        return Context.get(context, Store)
      }))
      const error = yield* Effect.flip(store.createConversation({}))
      assert.deepStrictEqual([error._tag, error.reason], ["StoreError", "closed"])
    }))
})
