import { Effect } from "effect"
import type { ChunkRow } from "../GroupSteps.js"
import type { GroupStatements, RunRow } from "../SqlGroupCommit.js"
import type { SqliteSql } from "./Client.js"

/**
 * The group commit's statements in SQLite's words (../SqlGroupCommit.ts): lists become `?` lists.
 * Statements are prepared once per distinct text, so lists are padded to a power of two (repeating
 * an element changes nothing) and a few texts serve every group size.
 */

/** Rows per multi-row statement: 3 parameters a row stays far below SQLite's limit. */
const ROWS = 512

const padded = <A>(xs: ReadonlyArray<A>): ReadonlyArray<A> => {
  let size = 1
  while (size < xs.length) size *= 2
  return size === xs.length ? xs : [...xs, ...Array.from({ length: size - xs.length }, () => xs[0]!)]
}

/** Splits a list into power-of-two pieces (largest first) of at most ROWS, for inserts that cannot be padded. */
const pieces = <A>(xs: ReadonlyArray<A>): ReadonlyArray<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  let at = 0
  while (at < xs.length) {
    let size = ROWS
    while (size > xs.length - at) size /= 2
    out.push(xs.slice(at, at + size))
    at += size
  }
  return out
}

/** One statement per piece; nearly always a single piece, run without a loop around it. */
const perPiece = <A, B, E>(xs: ReadonlyArray<A>, f: (piece: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, E>) => {
  const all = pieces(xs)
  return all.length === 1 ? f(all[0]!) : Effect.map(Effect.forEach(all, f), (rows) => rows.flat())
}

const texts = new Map<string, string>()

/** `(?, ?), (?, ?), …`, made once per shape. */
const placeholders = (rows: number, columns: number): string => {
  const key = `${rows}x${columns}`
  let text = texts.get(key)
  if (text === undefined) {
    text = Array.from({ length: rows }, () => `(${Array.from({ length: columns }, () => "?").join(", ")})`).join(", ")
    texts.set(key, text)
  }
  return text
}

/** Each statement runs on the connection at once (Client.ts's `exec`), inside the group's transaction. */
export const sqliteGroupStatements = (sql: SqliteSql): GroupStatements => ({
  // One writer holds the whole file: the UPDATE takes the write lock before anything is read.
  lockRuns: (ids, now) =>
    perPiece(ids, (piece) => {
      const list = padded(piece)
      return sql.exec(sql.unsafe<RunRow>(`UPDATE runs SET updated_at = ? WHERE id IN ${placeholders(1, list.length)} RETURNING id, conversation_id, last_seq`, [now, ...list]))
    }),
  insertChunks: (rows: ReadonlyArray<ChunkRow>) =>
    Effect.asVoid(perPiece(rows, (piece) =>
      sql.exec(sql.unsafe(`INSERT INTO chunks (run_id, seq, body) VALUES ${placeholders(piece.length, 3)}`, piece.flatMap((c) => [c.run_id, c.seq, c.body]))))),
  setLastSeqs: (runs) =>
    Effect.asVoid(perPiece(runs, (piece) => {
      const list = padded(piece)
      return sql.exec(sql.unsafe(
        `UPDATE runs SET last_seq = v.column2 FROM (VALUES ${placeholders(list.length, 2)}) AS v WHERE runs.id = v.column1`,
        list.flatMap(([id, last]) => [id, last])
      ))
    }))
})
