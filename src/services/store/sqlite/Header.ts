/**
 * The 100-byte SQLite file header (https://sqlite.org/fileformat2.html#the_database_header), read
 * without opening the file in SQLite: opening it in SQLite may create `-wal`/`-shm` files or convert
 * the journal mode, and a file Baton will refuse must be left exactly as it was.
 */
export interface SqliteHeader {
  readonly userVersion: number
  readonly applicationId: number
  /** 0 until a schema change: a file whose schema was never touched holds no tables. */
  readonly schemaCookie: number
}

const MAGIC = "SQLite format 3\u0000"
export const HEADER_SIZE = 100

export const parseHeader = (bytes: Uint8Array): SqliteHeader | undefined => {
  if (bytes.length < HEADER_SIZE) return undefined
  for (let i = 0; i < MAGIC.length; i++) if (bytes[i] !== MAGIC.charCodeAt(i)) return undefined
  const view = new DataView(bytes.buffer, bytes.byteOffset, HEADER_SIZE)
  const pageSize = view.getUint16(16)
  if (pageSize !== 1 && (pageSize < 512 || (pageSize & (pageSize - 1)) !== 0)) return undefined
  return {
    schemaCookie: view.getUint32(40),
    userVersion: view.getInt32(60),
    applicationId: view.getInt32(68)
  }
}
