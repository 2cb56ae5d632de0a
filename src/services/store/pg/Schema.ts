import type { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Schema } from "effect"
import type { StoreError } from "../../../domain/Errors.js"
import { corruptError, newerSchemaError, type PgTarget } from "./Failures.js"

/**
 * The PostgreSQL schema: the SQLite one's tables, columns and indexes (the shared statements run on
 * both), with the rules the database itself keeps for every process sharing it: at most one running
 * run per conversation (a partial unique index) and each run's chunks numbered 1, 2, 3… without a
 * gap or a repeat (the primary key, and a trigger that refuses a chunk whose predecessor is missing).
 */

export const SCHEMA_VERSION = 4

export const MIGRATIONS_TABLE = "baton_migrations"

/** Baton's tables: a schema without the migrations table but with one of these is someone else's. */
const TABLES = ["conversations", "items", "open_calls", "runs", "chunks", "steering", "usage", MIGRATIONS_TABLE]

const initial = (sql: SqlClient) =>
  Effect.gen(function*() {
    // `touched` orders conversations with equal updated_at; a sequence, since concurrent
    // transactions would each read the same max().
    yield* sql`CREATE SEQUENCE conversation_touches AS bigint`
    yield* sql`CREATE TABLE conversations (
      id text PRIMARY KEY,
      title text,
      settings text NOT NULL,
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL,
      touched bigint NOT NULL,
      last_position bigint NOT NULL DEFAULT 0,
      segment bigint NOT NULL DEFAULT 1
    )`
    yield* sql`CREATE UNIQUE INDEX conversations_touched ON conversations (touched)`
    yield* sql`CREATE INDEX conversations_recent ON conversations (updated_at, touched)`

    yield* sql`CREATE TABLE items (
      conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
      position bigint NOT NULL,
      id text NOT NULL,
      segment bigint NOT NULL,
      in_context smallint NOT NULL,
      in_trace smallint NOT NULL,
      is_message smallint NOT NULL,
      type text NOT NULL,
      body text NOT NULL,
      created_at bigint NOT NULL,
      CONSTRAINT items_position PRIMARY KEY (conversation_id, position)
    )`
    yield* sql`CREATE UNIQUE INDEX items_id ON items (id)`
    yield* sql`CREATE INDEX items_context ON items (conversation_id, segment, position) WHERE in_context = 1`
    yield* sql`CREATE INDEX items_trace ON items (conversation_id, segment, position) WHERE in_trace = 1`
    // Backfill walks this one backwards from the end: cost is the window, not the history.
    yield* sql`CREATE INDEX items_render ON items (conversation_id, position) WHERE in_trace = 1 AND is_message = 1`
    // Compaction planning reads one whole segment (context and trace items).
    yield* sql`CREATE INDEX items_segment ON items (conversation_id, segment, position)`

    // The current context's tool calls still waiting for a tool_return: pending approvals read exactly these rows.
    yield* sql`CREATE TABLE open_calls (
      conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
      position bigint NOT NULL,
      tool_call_id text NOT NULL,
      PRIMARY KEY (conversation_id, position)
    )`

    yield* sql`CREATE TABLE runs (
      id text PRIMARY KEY,
      created bigint GENERATED ALWAYS AS IDENTITY,
      conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
      otid text NOT NULL,
      kind text NOT NULL,
      status text NOT NULL,
      stop_reason text,
      last_seq bigint NOT NULL DEFAULT 0,
      owner text,
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL
    )`
    yield* sql`CREATE UNIQUE INDEX runs_otid ON runs (conversation_id, otid)`
    // At most one running run per conversation, whichever process starts it.
    yield* sql`CREATE UNIQUE INDEX runs_running ON runs (conversation_id) WHERE status = 'running'`

    yield* sql`CREATE TABLE chunks (
      run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
      seq bigint NOT NULL,
      body text NOT NULL,
      CONSTRAINT chunks_seq PRIMARY KEY (run_id, seq)
    )`
    // Once per INSERT statement, over the rows it added: a seq below 1, or one whose predecessor in
    // its run is missing, fails the statement (and the transaction). With the primary key, a run's
    // chunks are exactly 1..n whoever writes them.
    yield* sql.unsafe(`CREATE FUNCTION chunks_contiguous() RETURNS trigger LANGUAGE plpgsql
      SET search_path FROM CURRENT AS $$
      DECLARE
        gap record;
      BEGIN
        SELECT n.run_id, n.seq INTO gap FROM inserted n
          WHERE n.seq < 1 OR (n.seq > 1 AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.run_id = n.run_id AND c.seq = n.seq - 1))
          LIMIT 1;
        IF FOUND THEN
          RAISE EXCEPTION 'chunk % of run % does not follow the run''s last chunk', gap.seq, gap.run_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'chunks_contiguous';
        END IF;
        RETURN NULL;
      END
      $$`)
    yield* sql`CREATE TRIGGER chunks_contiguous AFTER INSERT ON chunks REFERENCING NEW TABLE AS inserted
      FOR EACH STATEMENT EXECUTE FUNCTION chunks_contiguous()`
  })

// Results are committed as their tools finish: "has this call a result?" is one index lookup.
const toolReturnIndex = (sql: SqlClient) =>
  sql`CREATE INDEX items_tool_return ON items (conversation_id, (body::jsonb ->> 'tool_call_id')) WHERE type = 'tool_return'`

// A subagent's conversation names its parent's Task call (one child per call); a fork names its source.
const lineage = (sql: SqlClient) =>
  Effect.gen(function*() {
    yield* sql`ALTER TABLE conversations ADD COLUMN parent_id text, ADD COLUMN parent_call text,
      ADD COLUMN forked_from text, ADD COLUMN forked_at bigint`
    yield* sql`CREATE UNIQUE INDEX conversations_parent ON conversations (parent_id, parent_call) WHERE parent_id IS NOT NULL`
  })

// Steering held until the next input assembly; every model request's token usage (cost statistics' raw data).
const steeringAndUsage = (sql: SqlClient) =>
  Effect.gen(function*() {
    yield* sql`CREATE TABLE steering (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
      body text NOT NULL,
      created_at bigint NOT NULL
    )`
    yield* sql`CREATE INDEX steering_conversation ON steering (conversation_id, id)`
    yield* sql`CREATE TABLE usage (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
      run_id text,
      purpose text NOT NULL,
      model text NOT NULL,
      input_tokens bigint NOT NULL,
      output_tokens bigint NOT NULL,
      cache_read_tokens bigint NOT NULL,
      cache_write_tokens bigint NOT NULL,
      created_at bigint NOT NULL
    )`
    yield* sql`CREATE INDEX usage_conversation ON usage (conversation_id, created_at)`
    yield* sql`CREATE INDEX usage_time ON usage (created_at)`
  })

const migrations: ReadonlyArray<readonly [id: number, name: string, run: (sql: SqlClient) => Effect.Effect<unknown, SqlError>]> = [
  [1, "initial", initial],
  [2, "tool_return_index", toolReturnIndex],
  [3, "lineage", lineage],
  [4, "steering_and_usage", steeringAndUsage]
]

const Version = Schema.Struct({ version: Schema.Union(Schema.Int, Schema.NumberFromString) })

/**
 * Runs the missing migrations in one transaction. A transaction-scoped advisory lock (per schema)
 * makes processes starting together on a fresh database take turns: the first migrates, the others
 * then find nothing to do. A schema holding tables of Baton's names but not its migrations table is
 * someone else's and is refused untouched; one migrated by a newer Baton is refused too.
 */
export const migrate = (sql: SqlClient, target: PgTarget): Effect.Effect<void, StoreError | SqlError> =>
  sql.withTransaction(Effect.gen(function*() {
    yield* sql`SELECT pg_advisory_xact_lock(hashtext('baton_migrations:' || coalesce(current_schema(), '')))`
    const [registry] = yield* sql<{ readonly found: string | null }>`SELECT to_regclass('baton_migrations')::text AS found`
    if (registry?.found == null) {
      const clash = yield* sql<{ readonly name: string }>`SELECT table_name AS name FROM information_schema.tables
        WHERE table_schema = current_schema() AND table_name IN ${sql.in(TABLES)}`
      if (clash.length > 0) {
        return yield* corruptError(target, `already holds tables Baton did not create (${clash.map((t) => t.name).join(", ")})`)
      }
      yield* sql`CREATE TABLE baton_migrations (
        migration_id integer PRIMARY KEY,
        name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`
    }
    const rows = yield* sql`SELECT coalesce(max(migration_id), 0) AS version FROM baton_migrations`
    const [row] = yield* Schema.decodeUnknown(Schema.Array(Version))(rows).pipe(
      Effect.mapError(() => corruptError(target, "holds a baton_migrations table Baton cannot read"))
    )
    const current = row?.version ?? 0
    if (current > SCHEMA_VERSION) return yield* newerSchemaError(target, current, SCHEMA_VERSION)
    for (const [id, name, run] of migrations) {
      if (id <= current) continue
      yield* run(sql)
      yield* sql`INSERT INTO baton_migrations (migration_id, name) VALUES (${id}, ${name})`
    }
  }))
