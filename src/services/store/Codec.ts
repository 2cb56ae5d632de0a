import { Clock, Effect, Either, ParseResult, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { type Conversation, ConversationSettings, type ConversationSettingsInput } from "../../domain/Conversation.js"
import { busyWith, ChunkSeqError, NotFound, StoreError, ToolCallAnswered } from "../../domain/Errors.js"
import { decodeEventJson, encodeEventJson } from "../../domain/EventJson.js"
import { type Chunk, isChunk, isDelta, type TaskEvent } from "../../domain/Events.js"
import type { ChunkCheckFailure } from "../../domain/ItemLog.js"
import { ConversationId, type Otid, RunId, type ToolCallId } from "../../domain/Ids.js"
import type { Write } from "../../domain/History.js"
import type { CreateConversationOptions } from "../Store.js"
import { activityOf, type Run, type RunKind } from "../../domain/Run.js"

/**
 * What every Store layer does the same way at its edges: ids, the exact JSON text an item is kept
 * as, decoding it back, and the errors the port promises.
 */

/** Readable, prefixed, unguessable: `conv-…`, `run-…`, `msg-…`. */
export const newId = (prefix: "conv" | "run" | "msg"): Effect.Effect<string> =>
  Effect.sync(() => `${prefix}-${randomUUID()}`)

/** The stored text of an item or chunk; exports hand it out byte for byte. Throws on a value that is not a TaskEvent (a bug). */
export const encodeEventText = (event: TaskEvent): string => {
  try {
    return encodeEventJson(event)
  } catch (e) {
    throw new Error(`Store: an item does not encode: ${ParseResult.isParseError(e) ? ParseResult.TreeFormatter.formatErrorSync(e) : String(e)}`)
  }
}

const corrupt = (path: string | undefined, what: string) =>
  new StoreError({
    reason: "corrupt",
    ...(path === undefined ? {} : { path }),
    message: `${what} in ${path ?? "the store"} does not decode; the database is damaged or was written by ` +
      `another program. Baton changed nothing. Restore a backup, or start a fresh store (another file or database).`
  })

export const decodeItemBody = (body: string, path: string | undefined): Either.Either<TaskEvent, StoreError> =>
  Either.mapLeft(decodeEventJson(body), () => corrupt(path, "A stored item"))

export const decodeEvent: (body: string, path: string | undefined) => Effect.Effect<TaskEvent, StoreError> = decodeItemBody

export const decodeChunk = (body: string, path: string | undefined): Either.Either<Chunk, StoreError> => {
  const event = decodeEventJson(body)
  if (Either.isLeft(event)) return Either.left(corrupt(path, "A stored item"))
  return isChunk(event.right) ? Either.right(event.right) : Either.left(corrupt(path, "A stored chunk"))
}

/** A page of stored chunk bodies, decoded in one step. */
export const decodeChunks = (bodies: ReadonlyArray<string>, path: string | undefined): Either.Either<Array<Chunk>, StoreError> => {
  const out: Array<Chunk> = []
  for (const body of bodies) {
    const chunk = decodeChunk(body, path)
    if (Either.isLeft(chunk)) return Either.left(chunk.left)
    out.push(chunk.right)
  }
  return Either.right(out)
}

/** Settings as given by a caller are already typed; a value that breaks a refinement is a bug. */
const decodeSettings = (input: ConversationSettingsInput): Effect.Effect<ConversationSettings> =>
  Schema.decode(ConversationSettings)(input).pipe(Effect.orDie)

/** A new conversation: defaults filled in, a fresh id, stamped by the Clock. */
export const makeConversation = (
  input: ConversationSettingsInput,
  options: CreateConversationOptions | undefined
): Effect.Effect<Conversation> =>
  Effect.gen(function*() {
    const settings = yield* decodeSettings(input)
    const id = ConversationId.make(yield* newId("conv"))
    const now = yield* Clock.currentTimeMillis
    return {
      id,
      ...(options?.title === undefined ? {} : { title: options.title }),
      created_at: now,
      updated_at: now,
      settings,
      ...(options?.parent === undefined ? {} : { parent: options.parent }),
      ...(options?.forked_from === undefined ? {} : { forked_from: options.forked_from })
    }
  })

// Made once: a schema built per call is a new AST, whose parser would be compiled for every read.
const SettingsJson = Schema.parseJson(ConversationSettings)
const encodeSettingsJson = Schema.encode(SettingsJson)
const decodeSettingsJson = Schema.decode(SettingsJson)

export const encodeSettings = (settings: ConversationSettings): Effect.Effect<string> =>
  encodeSettingsJson(settings).pipe(Effect.orDie)

export const decodeStoredSettings = (body: string, path: string | undefined): Effect.Effect<ConversationSettings, StoreError> =>
  decodeSettingsJson(body).pipe(
    Effect.mapError(() => corrupt(path, "A conversation's settings"))
  )

/**
 * Deltas never enter history: a write carrying one as an item is a bug in the caller, so it dies
 * (before anything is written) rather than fail with a typed error nobody could handle.
 */
export const rejectDeltaItems = (write: Write): Effect.Effect<void> => {
  const delta = write.items?.find((i) => isDelta(i.item))
  return delta === undefined
    ? Effect.void
    : Effect.dieMessage(`Store.commit: ${delta.item.type} is a delta; deltas are stream-only, never items`)
}

export const conversationNotFound = (id: string) =>
  new NotFound({ entity: "conversation", id, message: `No conversation ${id}` })

/** Another run of this conversation is still running (here or in another process on the same store). */
/** A run as createRun makes it: running, nothing committed yet. */
export const newRun = (conversationId: ConversationId, otid: Otid, kind: RunKind, owner: string | undefined) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const run: Run = {
      id: RunId.make(yield* newId("run")),
      conversationId,
      otid,
      kind,
      status: "running",
      stopReason: undefined,
      lastSeq: 0,
      owner,
      createdAt: now,
      updatedAt: now
    }
    return run
  })

export const busyConflict = (id: ConversationId, active: Run) =>
  busyWith(id, active.id, activityOf(active.kind))

export const runNotFound = (id: string) => new NotFound({ entity: "run", id, message: `No run ${id}` })

export const messageNotFound = (id: string) => new NotFound({ entity: "message", id, message: `No message ${id}` })

/** A write that answers a call which is no longer open (another writer answered it first). */
export const callAnswered = (id: ConversationId, toolCallId: ToolCallId) =>
  new ToolCallAnswered({ conversationId: id, toolCallId, message: `tool call ${toolCallId} is not open any more: it has a result already` })

export const chunkCheckError = (failure: ChunkCheckFailure): NotFound | ChunkSeqError =>
  failure._tag === "UnknownRun"
    ? new NotFound({ entity: "run", id: failure.runId, message: `No run ${failure.runId} in this conversation` })
    : new ChunkSeqError({
      runId: RunId.make(failure.runId),
      expected: failure.expected,
      got: failure.got,
      message: `Run ${failure.runId}: expected chunk seq ${failure.expected}, got ${failure.got}`
    })
