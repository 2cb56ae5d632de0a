import { Clock, Effect, Schema } from "effect"
import type { SqlError } from "@effect/sql/SqlError"
import type { NotFound } from "../../domain/Errors.js"
import type { ConversationId } from "../../domain/Ids.js"
import type { UserMessage } from "../../domain/Messages.js"
import { UsagePurpose, type UsageRecord } from "../../domain/Usage.js"
import { conversationNotFound, decodeEvent, encodeEventText } from "./Codec.js"
import { hotPath } from "./SqlCommit.js"
import type { SqlEngine } from "./SqlStore.js"
import { decodeRows } from "./SqlRows.js"

/**
 * The SQL store's side tables, beside the conversation log: steering held for the next input
 * assembly, and the usage of every model request. Same statements on SQLite and PostgreSQL.
 */

const Integer = Schema.Union(Schema.Int, Schema.NumberFromString.pipe(Schema.int()))
const SteeringRow = Schema.Struct({ id: Integer, body: Schema.String })
const UsageRow = Schema.Struct({
  conversation_id: Schema.String,
  run_id: Schema.NullOr(Schema.String),
  purpose: UsagePurpose,
  model: Schema.String,
  input_tokens: Integer,
  output_tokens: Integer,
  cache_read_tokens: Integer,
  cache_write_tokens: Integer,
  created_at: Integer
})

export const makeSqlLedger = (
  engine: SqlEngine,
  /** The conversation's held steering rows (NotFound for no conversation), in one statement. */
  held: (id: ConversationId) => Effect.Effect<ReadonlyArray<unknown>, NotFound | SqlError>
) => {
  const { guard: run, source, sql } = engine
  const { exec } = hotPath(engine)
  const exists = (id: ConversationId) =>
    Effect.flatMap(exec(sql<{ readonly id: string }>`SELECT id FROM conversations WHERE id = ${id}`), (rows) =>
      rows.length === 0 ? Effect.fail(conversationNotFound(id)) : Effect.void)

  const messages = (rows: ReadonlyArray<{ readonly id: number; readonly body: string }>) =>
    Effect.forEach([...rows].sort((a, b) => a.id - b.id), (row) =>
      Effect.map(decodeEvent(row.body, source.label), (event) => event as UserMessage))

  return {
    queueSteering: Effect.fn("Store.queueSteering")(function*(id: ConversationId, message: UserMessage) {
      const now = yield* Clock.currentTimeMillis
      yield* sql.withTransaction(Effect.zipRight(
        exists(id),
        sql`INSERT INTO steering (conversation_id, body, created_at) VALUES (${id}, ${encodeEventText(message)}, ${now})`
      )).pipe(run)
    }),
    heldSteering: Effect.fn("Store.heldSteering")(function*(id: ConversationId) {
      const rows = yield* held(id).pipe(run, Effect.flatMap(decodeRows(SteeringRow, source)))
      return yield* messages(rows)
    }),
    takeSteering: Effect.fn("Store.takeSteering")(function*(id: ConversationId) {
      const rows = yield* sql.withTransaction(Effect.zipRight(
        exists(id),
        sql`DELETE FROM steering WHERE conversation_id = ${id} RETURNING id, body`
      )).pipe(run, Effect.flatMap(decodeRows(SteeringRow, source)))
      return yield* messages(rows)
    }),
    recordUsage: Effect.fn("Store.recordUsage")(function*(r: UsageRecord) {
      yield* exec(sql`INSERT INTO usage (conversation_id, run_id, purpose, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, created_at)
        VALUES (${r.conversation_id}, ${r.run_id ?? null}, ${r.purpose}, ${r.model}, ${r.input_tokens}, ${r.output_tokens},
          ${r.cache_read_tokens}, ${r.cache_write_tokens}, ${r.created_at})`).pipe(run)
    }),
    usage: Effect.fn("Store.usage")(function*(query?: { readonly conversationId?: ConversationId; readonly since?: number }) {
      const since = query?.since ?? 0
      const rows = yield* (query?.conversationId !== undefined
        ? sql`SELECT * FROM usage WHERE conversation_id = ${query.conversationId} AND created_at >= ${since} ORDER BY created_at, id`
        : sql`SELECT * FROM usage WHERE created_at >= ${since} ORDER BY created_at, id`).pipe(run, Effect.flatMap(decodeRows(UsageRow, source)))
      return rows.map((row): UsageRecord => {
        const { run_id, ...rest } = row
        return run_id === null ? rest : { ...rest, run_id }
      })
    })
  }
}
