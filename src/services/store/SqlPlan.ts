import type { SqlError } from "@effect/sql/SqlError"
import type { Effect } from "effect"
import { checkChunkSeqs, defaultFlags, isMessageType } from "../../domain/ItemLog.js"
import { records, type Write } from "../../domain/History.js"
import type { UsageRecord } from "../../domain/Usage.js"

/**
 * A write planned whole before it reaches the database, for a database that can run it as one
 * statement (PostgreSQL: data-modifying CTEs): one round trip and atomic on its own, so it needs no
 * BEGIN, COMMIT or savepoint around it. Only the common writes are planned so — items that open or
 * close no tool call, no calls expected open, no new segment; anything else takes the general path,
 * whose statements read what they decide on.
 */

export interface ItemRow {
  readonly id: string
  readonly in_context: 0 | 1
  readonly in_trace: 0 | 1
  readonly is_message: 0 | 1
  readonly type: string
  readonly body: string
}

/** A run the write stamps: its last seq must still be `prev` (when chunks continue it); `last`/`status` are what it takes. */
export interface PlannedRun {
  readonly id: string
  readonly prev: number | null
  readonly last: number | null
  readonly status: string | null
  readonly stopReason: string | null
}

export interface Planned {
  readonly conversationId: string
  /** Makes the conversation the most recently active (see `records`). */
  readonly records: boolean
  readonly now: number
  readonly items: ReadonlyArray<ItemRow>
  readonly runs: ReadonlyArray<PlannedRun>
  readonly chunks: ReadonlyArray<{ readonly run_id: string; readonly seq: number; readonly body: string }>
  readonly steering: ReadonlyArray<string>
  readonly usage: ReadonlyArray<UsageRecord>
}

/** What the statement found: no conversation; the checks refused it (nothing written); or written, with the head it left. */
export interface Written {
  readonly found: boolean
  readonly ok: boolean
  readonly lastPosition: number
  readonly segment: number
}

export interface NewRunRow {
  readonly id: string
  readonly conversation_id: string
  readonly otid: string
  readonly kind: string
  readonly owner: string | null
  readonly created_at: number
}

export interface Created {
  readonly found: boolean
  /** The run of this otid and the running run, when either exists (nothing was written then). */
  readonly existing: ReadonlyArray<unknown>
}

/** A database's one-statement writes (an SqlEngine's, where it has them). */
export interface OneStatement {
  readonly commit: (planned: Planned) => Effect.Effect<Written, SqlError>
  /** Inserts the run, and its input (planned without runs or chunks), unless the otid has a run or another runs. */
  readonly createRun: (run: NewRunRow, input: Planned | undefined) => Effect.Effect<Created, SqlError>
}

/** Whether a write's items open or close a tool call of the context (its open calls must then be read). */
export const touchesOpenCalls = (rows: ReadonlyArray<Pick<ItemRow, "in_context" | "type">>): boolean =>
  rows.some((r) => r.in_context === 1 && (r.type === "tool_call" || r.type === "tool_return"))

export const itemRowsOf = (write: Write, ids: ReadonlyArray<string>, bodies: ReadonlyArray<string>): ReadonlyArray<ItemRow> =>
  (write.items ?? []).map((n, i) => {
    const flags = defaultFlags(n.item, n.contextOnly, n.traceOnly)
    return {
      id: ids[i]!,
      in_context: flags.inContext ? 1 : 0,
      in_trace: flags.inTrace ? 1 : 0,
      is_message: isMessageType(n.item.type) ? 1 : 0,
      type: n.item.type,
      body: bodies[i]!
    }
  })

/** The write as one statement, or undefined when it needs the general path (or its chunks do not follow each other). */
export const plan = (
  write: Write,
  prepared: { readonly now: number; readonly ids: ReadonlyArray<string>; readonly bodies: ReadonlyArray<string>; readonly chunkBodies: ReadonlyArray<string> }
): Planned | undefined => {
  if ((write.expectOpen ?? []).length > 0 || write.newSegment === true) return undefined
  const items = itemRowsOf(write, prepared.ids, prepared.bodies)
  if (touchesOpenCalls(items)) return undefined
  const chunks = write.chunks ?? []
  const first = new Map<string, number>()
  for (const c of chunks) if (!first.has(c.run_id)) first.set(c.run_id, c.seq)
  const own = checkChunkSeqs(chunks, (runId) => first.get(runId)! - 1)
  if (own._tag !== "Ok") return undefined
  const finish = write.finishRun
  const runIds = [...new Set([...first.keys(), ...(finish === undefined ? [] : [finish.runId])])]
  return {
    conversationId: write.conversationId,
    records: records(write),
    now: prepared.now,
    items,
    runs: runIds.map((id) => {
      const from = first.get(id)
      const ended = finish?.runId === id ? finish : undefined
      return {
        id,
        prev: from === undefined ? null : from - 1,
        last: own.lastSeqs.get(id) ?? null,
        status: ended?.status ?? null,
        stopReason: ended?.stopReason ?? null
      }
    }),
    chunks: chunks.map((c, i) => ({ run_id: c.run_id, seq: c.seq, body: prepared.chunkBodies[i]! })),
    steering: write.takesSteering ?? [],
    usage: write.usage ?? []
  }
}
