import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"

/** Every file in a directory with its size, mtime and content hash: "untouched" means equal fingerprints. */
export const fingerprint = (dir: string) =>
  Fs.readdirSync(dir).sort().map((name) => {
    const file = Path.join(dir, name)
    const stat = Fs.statSync(file)
    return {
      name,
      size: stat.size,
      mtimeMs: stat.mtimeMs,
      mode: stat.mode,
      sha256: stat.isFile() ? createHash("sha256").update(Fs.readFileSync(file)).digest("hex") : "dir"
    }
  })

/** A plain connection to a file, outside the Store, to inspect or tamper with it. */
export const rawSqlite = (filename: string, options?: { readonly disableWAL?: boolean }) =>
  SqliteClient.make({ filename, ...options }).pipe(Effect.provide(Reactivity.layer))
