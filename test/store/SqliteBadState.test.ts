import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { StoreError } from "../../src/domain/Errors.js"
import { MIGRATIONS_TABLE, SCHEMA_VERSION } from "../../src/services/store/sqlite/Schema.js"
import { Store } from "../../src/services/Store.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import { append, assistant, user } from "../support/contract/fixtures.js"
import { fingerprint, rawSqlite } from "../support/sqliteFiles.js"
import { tempDir } from "../support/tempDir.js"

/** Opening must fail with exactly this reason, name the file, say what to do, and change nothing. */
const expectRefusal = (dir: string, filename: string, reason: StoreError["reason"], advice: RegExp) =>
  Effect.gen(function*() {
    const before = fingerprint(dir)
    const error = yield* Effect.flip(Effect.scoped(Layer.build(layerSqlite({ filename }))))
    assert.strictEqual(error._tag, "StoreError")
    assert.strictEqual(error.reason, reason)
    assert.strictEqual(error.path, filename)
    assert.include(error.message, filename)
    assert.match(error.message, advice)
    assert.notMatch(error.message, /\n\s+at /)
    assert.deepStrictEqual(fingerprint(dir), before)
    return error
  })

/** A Baton store with some history, closed cleanly. */
const makeStore = (filename: string, marker = "hello") =>
  Effect.gen(function*() {
    const c = yield* Effect.flatMap(Store, (s) => s.createConversation({}))
    for (let i = 0; i < 40; i++) yield* append(c.id, user(`${marker} ${i} ${"x".repeat(200)}`), assistant(`a${i}`))
    return c.id
  }).pipe(Effect.provide(layerSqlite({ filename })))

describe("StoreSqlite bad state", () => {
  it.scoped("a file that is not SQLite: corrupt, untouched", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = Path.join(dir, "baton.db")
      Fs.writeFileSync(filename, "my notes, not a database\n".repeat(100))
      yield* expectRefusal(dir, filename, "corrupt", /Move the file aside/)
    }))

  it.scoped("a damaged database (first page overwritten): corrupt, untouched", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = Path.join(dir, "baton.db")
      yield* makeStore(filename)
      const fd = Fs.openSync(filename, "r+")
      Fs.writeSync(fd, Buffer.alloc(1000, 0xa5), 0, 1000, 100)
      Fs.closeSync(fd)
      yield* expectRefusal(dir, filename, "corrupt", /damaged/)
    }))

  it.scoped("a damaged page met later is a corrupt StoreError, not a defect", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = Path.join(dir, "baton.db")
      const id = yield* makeStore(filename, "MARKER")
      const bytes = Fs.readFileSync(filename)
      const at = bytes.indexOf("MARKER 20")
      assert.isAbove(at, 4096)
      const pageStart = at - (at % 4096)
      const fd = Fs.openSync(filename, "r+")
      Fs.writeSync(fd, Buffer.alloc(64, 0xa5), 0, 64, pageStart)
      Fs.closeSync(fd)
      const error = yield* Effect.flip(
        Effect.flatMap(Store, (s) => s.listItems(id, { limit: 1000 })).pipe(Effect.provide(layerSqlite({ filename })))
      )
      assert.strictEqual(error._tag, "StoreError")
      if (error._tag === "StoreError") {
        assert.strictEqual(error.reason, "corrupt")
        assert.strictEqual(error.path, filename)
      }
    }))

  it.scoped("a database from a newer schema: newer_schema, untouched", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = Path.join(dir, "baton.db")
      yield* makeStore(filename)
      yield* Effect.scoped(Effect.gen(function*() {
        const sql = yield* rawSqlite(filename)
        yield* sql.unsafe(`INSERT INTO ${MIGRATIONS_TABLE} (migration_id, name) VALUES (${SCHEMA_VERSION + 1}, 'future')`)
        yield* sql.unsafe(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`)
      }))
      const error = yield* expectRefusal(dir, filename, "newer_schema", /Upgrade Baton/)
      assert.include(error.message, `schema version ${SCHEMA_VERSION + 1}`)
    }))

  it.scoped("a SQLite database Baton did not create: refused, untouched", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = Path.join(dir, "baton.db")
      // Rollback-journal mode, as most programs leave it: opening it in WAL mode would rewrite its header.
      yield* Effect.scoped(
        Effect.flatMap(rawSqlite(filename, { disableWAL: true }), (sql) => sql.unsafe(`CREATE TABLE notes (body TEXT)`))
      )
      yield* expectRefusal(dir, filename, "corrupt", /did not create/)
    }))

  it.scoped("a directory at the path: io, untouched", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = Path.join(dir, "baton.db")
      Fs.mkdirSync(filename)
      yield* expectRefusal(dir, filename, "io", /not a regular file/)
    }))

  it.scoped("a read-only directory: read_only for a new file and for an existing store, untouched", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const locked = Path.join(dir, "locked")
      Fs.mkdirSync(locked)
      const existing = Path.join(locked, "old.db")
      yield* makeStore(existing)
      // Root ignores permission bits: then the opening process runs as nobody, owning the files.
      const asRoot = process.getuid?.() === 0
      if (asRoot) {
        Fs.chmodSync(dir, 0o755)
        for (const p of [locked, ...Fs.readdirSync(locked).map((f) => Path.join(locked, f))]) Fs.chownSync(p, 65534, 65534)
      }
      Fs.chmodSync(locked, 0o555)
      yield* Effect.addFinalizer(() => Effect.sync(() => Fs.chmodSync(locked, 0o755)))
      const before = fingerprint(locked)
      const filenames = [Path.join(locked, "baton.db"), existing]
      const out = execFileSync(process.execPath, ["--import", "tsx", "test/support/openStore.ts", ...filenames], {
        encoding: "utf8",
        ...(asRoot ? { uid: 65534, gid: 65534 } : {})
      })
      const results = out.trim().split("\n").map((line) => JSON.parse(line))
      assert.strictEqual(results.length, 2, out)
      filenames.forEach((filename, k) => {
        const { error } = results[k]
        assert.deepStrictEqual([error?._tag, error?.reason, error?.path], ["StoreError", "read_only", filename], out)
        assert.match(error.message, /writable/)
        assert.include(error.message, filename)
      })
      assert.deepStrictEqual(fingerprint(locked), before)
    }))
})
