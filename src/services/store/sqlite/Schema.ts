import * as Migrator from "@effect/sql/Migrator"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"

/** "Batn": marks a file as Baton's, so Baton never migrates someone else's SQLite database. */
export const APPLICATION_ID = 0x4261746e

/** Also recorded as `PRAGMA user_version`; a file above it was written by a newer Baton. */
export const SCHEMA_VERSION = 5

export const MIGRATIONS_TABLE = "baton_migrations"

const initial = Effect.gen(function*() {
  const sql = yield* SqlClient
  // `touched` is a store-wide counter that orders conversations with equal updated_at.
  yield* sql`CREATE TABLE conversations (
    id TEXT PRIMARY KEY NOT NULL,
    title TEXT,
    settings TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    touched INTEGER NOT NULL,
    last_position INTEGER NOT NULL DEFAULT 0,
    segment INTEGER NOT NULL DEFAULT 1
  )`
  yield* sql`CREATE UNIQUE INDEX conversations_touched ON conversations (touched)`
  yield* sql`CREATE INDEX conversations_recent ON conversations (updated_at, touched)`

  // A rowid table: bodies can be large (tool output), which WITHOUT ROWID handles badly.
  yield* sql`CREATE TABLE items (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    id TEXT NOT NULL,
    segment INTEGER NOT NULL,
    in_context INTEGER NOT NULL,
    in_trace INTEGER NOT NULL,
    is_message INTEGER NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL
  )`
  yield* sql`CREATE UNIQUE INDEX items_position ON items (conversation_id, position)`
  yield* sql`CREATE UNIQUE INDEX items_id ON items (id)`
  yield* sql`CREATE INDEX items_context ON items (conversation_id, segment, position) WHERE in_context = 1`
  yield* sql`CREATE INDEX items_trace ON items (conversation_id, segment, position) WHERE in_trace = 1`
  // Backfill walks this one backwards from the end: cost is the window, not the history.
  yield* sql`CREATE INDEX items_render ON items (conversation_id, position) WHERE in_trace = 1 AND is_message = 1`

  // The current context's tool calls still waiting for a tool_return: pending approvals read
  // exactly these rows.
  yield* sql`CREATE TABLE open_calls (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    tool_call_id TEXT NOT NULL,
    PRIMARY KEY (conversation_id, position)
  ) WITHOUT ROWID`

  yield* sql`CREATE TABLE runs (
    id TEXT PRIMARY KEY NOT NULL,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    otid TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    stop_reason TEXT,
    last_seq INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  )`
  yield* sql`CREATE UNIQUE INDEX runs_otid ON runs (conversation_id, otid)`
  yield* sql`CREATE INDEX runs_running ON runs (conversation_id) WHERE status = 'running'`

  yield* sql`CREATE TABLE chunks (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL
  )`
  yield* sql`CREATE UNIQUE INDEX chunks_seq ON chunks (run_id, seq)`
  yield* sql.unsafe(`PRAGMA user_version = 1`)
})

const runOwnersAndSegments = Effect.gen(function*() {
  const sql = yield* SqlClient
  // Start-up closes only runs whose owning process is gone, not another live process's.
  yield* sql`ALTER TABLE runs ADD COLUMN owner TEXT`
  // At most one running run per conversation, enforced by the file itself so two processes cannot both start one.
  yield* sql`DROP INDEX runs_running`
  yield* sql`CREATE UNIQUE INDEX runs_running ON runs (conversation_id) WHERE status = 'running'`
  // Compaction planning reads one whole segment (context and trace items).
  yield* sql`CREATE INDEX items_segment ON items (conversation_id, segment, position)`
  yield* sql.unsafe(`PRAGMA user_version = 2`)
})

const toolReturnIndex = Effect.gen(function*() {
  const sql = yield* SqlClient
  // Results are committed as their tools finish: "has this call a result?" is one index lookup.
  yield* sql`CREATE INDEX items_tool_return ON items (conversation_id, json_extract(body, '$.tool_call_id')) WHERE type = 'tool_return'`
  yield* sql.unsafe(`PRAGMA user_version = 3`)
})

const lineage = Effect.gen(function*() {
  const sql = yield* SqlClient
  // A subagent's conversation names its parent's Task call (one child per call); a fork names its source.
  yield* sql`ALTER TABLE conversations ADD COLUMN parent_id TEXT`
  yield* sql`ALTER TABLE conversations ADD COLUMN parent_call TEXT`
  yield* sql`ALTER TABLE conversations ADD COLUMN forked_from TEXT`
  yield* sql`ALTER TABLE conversations ADD COLUMN forked_at INTEGER`
  yield* sql`CREATE UNIQUE INDEX conversations_parent ON conversations (parent_id, parent_call) WHERE parent_id IS NOT NULL`
  yield* sql.unsafe(`PRAGMA user_version = 4`)
})

const steeringAndUsage = Effect.gen(function*() {
  const sql = yield* SqlClient
  // Steering held by the backend until the conversation's next input assembly drains it.
  yield* sql`CREATE TABLE steering (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL
  )`
  yield* sql`CREATE INDEX steering_conversation ON steering (conversation_id, id)`
  // Every model request's token usage (turns, compactions, titles, failed attempts): cost statistics' raw data.
  yield* sql`CREATE TABLE usage (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    run_id TEXT,
    purpose TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    created_at INTEGER NOT NULL
  )`
  yield* sql`CREATE INDEX usage_conversation ON usage (conversation_id, created_at)`
  yield* sql`CREATE INDEX usage_time ON usage (created_at)`
  yield* sql.unsafe(`PRAGMA user_version = 5`)
})

/** Runs the missing migrations in one transaction; each one records its id as `user_version`. */
export const migrate = Migrator.make({})({
  loader: Migrator.fromRecord({
    "0001_initial": initial, "0002_run_owners_and_segments": runOwnersAndSegments,
    "0003_tool_return_index": toolReturnIndex,
    "0004_lineage": lineage,
    "0005_steering_and_usage": steeringAndUsage
  }),
  table: MIGRATIONS_TABLE
})
