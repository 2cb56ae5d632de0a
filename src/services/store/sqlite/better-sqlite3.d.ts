/**
 * The part of better-sqlite3's API the SQLite client uses (the package ships no types of its own).
 * https://github.com/WiseLibs/better-sqlite3/blob/master/docs/api.md
 */
declare module "better-sqlite3" {
  namespace Database {
    interface Statement {
      /** Whether the statement returns rows (a SELECT, or a write with RETURNING). */
      readonly reader: boolean
      all(...params: ReadonlyArray<unknown>): Array<object>
      run(...params: ReadonlyArray<unknown>): { readonly changes: number; readonly lastInsertRowid: number | bigint }
      /** Rows as arrays of values instead of objects, until turned off again. */
      raw(toggle?: boolean): this
    }
  }
  class Database {
    constructor(filename: string, options?: { readonly readonly?: boolean })
    /** Whether a transaction is open: SQLite ends one itself on some failures. */
    readonly inTransaction: boolean
    prepare(source: string): Database.Statement
    pragma(source: string): unknown
    close(): this
  }
  export = Database
}
