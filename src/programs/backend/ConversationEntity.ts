import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import * as Entity from "@effect/cluster/Entity"
import * as Rpc from "@effect/rpc/Rpc"
import { type Clock, Effect, Schema } from "effect"
import { BackendError } from "../../domain/Errors.js"
import { ApprovalDecision, CompactionReason } from "../../domain/Events.js"
import { ConversationId, RunId } from "../../domain/Ids.js"
import { ToolReturn } from "../../domain/Messages.js"
import { ThinkingLevel } from "../../domain/ProviderEvent.js"
import { CarryOverJson, SendInputJson } from "../../services/backend/HttpApi.js"
import { realClock } from "../../services/RealClock.js"
import type { Actors } from "./ConversationActors.js"

/**
 * A conversation as an `@effect/cluster` entity: its actor's commands as persisted RPCs, so a request
 * outlives the runner it was sent to (at-least-once: one that was not answered is delivered again to
 * the shard's next owner). Each handler is idempotent — a send by its otid, a result by its call and
 * otid, a cancel by being safe twice — which is why no RPC carries a primaryKey but Drive: a stored
 * Conflict must not answer the same otid forever after its run ended.
 *
 * `Drive` is the run itself: a send (or compaction) admits its run, then leaves a Drive for it in the
 * cluster's storage, whose reply is stored only when the run has stopped. While it is unanswered the
 * run belongs to whoever owns the conversation's shard: when a runner dies its shards move, the Drive
 * is delivered to the new owner, and the run continues there from its committed chunks (a reconnect).
 *
 * Steering needs no RPC: `Backend.steer` writes it to the shared store, and whichever runner owns the
 * conversation takes it at its next input assembly (after a takeover too). Forks and usage are reads
 * and writes of the store as well.
 */
export const ConversationEntity = Entity.make("Conversation", [
  Rpc.make("Send", { payload: { input: SendInputJson }, success: RunId, error: BackendError }),
  Rpc.make("Drive", {
    payload: { runId: RunId, thinking: Schema.optional(ThinkingLevel) },
    primaryKey: ({ runId }) => runId,
    error: BackendError
  }),
  Rpc.make("Compact", { payload: { reason: CompactionReason }, success: RunId, error: BackendError }),
  Rpc.make("Cancel", { payload: { carryOver: CarryOverJson }, error: BackendError }),
  Rpc.make("SubmitResult", {
    payload: Schema.Struct({ result: ToolReturn, decision: Schema.optionalWith(ApprovalDecision, { exact: true }) }),
    error: BackendError
  }),
  // Only meaningful to a live wait: never stored, never delivered twice.
  Rpc.make("SkipReconnectWait", {}).annotate(ClusterSchema.Persisted, false)
]).annotateRpcs(ClusterSchema.Persisted, true)

/**
 * The entity's handlers over this runner's conversation actors. `clock` is the backend's: the jobs a
 * handler starts wait on it (reconnect waits), not on the runner's machinery's.
 */
export const layerHandlers = (actors: Actors, clock: Clock.Clock) =>
  ConversationEntity.toLayer(
    Effect.gen(function*() {
      const address = yield* Entity.CurrentAddress
      const id = ConversationId.make(address.entityId)
      const self = (yield* ConversationEntity.client)(address.entityId)
      const drive = (runId: RunId, thinking?: ThinkingLevel) =>
        // Saved before the admission is answered: from here on a lost runner's run is resumed, never stranded.
        Effect.orDie(self.Drive({ runId, ...(thinking !== undefined ? { thinking } : {}) }, { discard: true })).pipe(Effect.withClock(realClock))
      return ConversationEntity.of({
        Send: ({ payload }) =>
          Effect.tap(actors.admitSend(id, payload.input), (runId) => drive(runId, payload.input.thinking)).pipe(Effect.withClock(clock)),
        Drive: ({ payload }) =>
          actors.drive(payload.runId, payload.thinking !== undefined ? { thinking: payload.thinking } : undefined).pipe(Effect.withClock(clock)),
        Compact: ({ payload }) => Effect.tap(actors.admitCompaction(id, payload.reason), (runId) => drive(runId)).pipe(Effect.withClock(clock)),
        Cancel: ({ payload }) => Effect.zipRight(actors.adoptActive(id), actors.cancel(id, payload.carryOver)).pipe(Effect.withClock(clock)),
        SubmitResult: ({ payload }) =>
          Effect.zipRight(actors.adoptActive(id), actors.submitResult(id, payload.result, payload.decision)).pipe(Effect.withClock(clock)),
        SkipReconnectWait: () => actors.skipReconnectWait(id)
      })
    }),
    // The actors keep one job per conversation; a Drive waits out its run while the others go on.
    { concurrency: "unbounded" }
  )
