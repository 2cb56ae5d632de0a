import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import * as Entity from "@effect/cluster/Entity"
import * as Rpc from "@effect/rpc/Rpc"
import { type Clock, Effect, Schema } from "effect"
import { BackendError } from "../../domain/Errors.js"
import { ApprovalDecision, CompactionReason } from "../../domain/Events.js"
import { ConversationId, Otid, RunId } from "../../domain/Ids.js"
import { InputMessage, ToolReturn } from "../../domain/Messages.js"
import { ThinkingLevel } from "../../domain/ProviderEvent.js"
import { driveBudgets } from "../../domain/Recovery.js"
import { policy } from "../../domain/RecoverySchedule.js"
import { realClock } from "../../services/RealClock.js"
import type { ActorRegistry } from "./ActorRegistry.js"
import { Command, type ConversationActors } from "./ConversationActor.js"

const optional = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

/** A Send command's input, as the cluster stores it. */
const SendInputMessage = Schema.Struct({
  messages: Schema.Array(InputMessage),
  events: optional(Schema.Array(ApprovalDecision)),
  thinking: optional(ThinkingLevel),
  retry: optional(Otid)
})

/** A Cancel command's carry-over, as the cluster stores it. */
const CarryOverMessage = Schema.Struct({
  results: optional(Schema.Array(ToolReturn)),
  turnAborted: optional(Schema.String),
  events: optional(Schema.Array(ApprovalDecision)),
  abort: optional(Schema.Boolean)
})

/**
 * A conversation as an `@effect/cluster` entity: its actor's commands as persisted RPCs, so a request
 * outlives the runner it was sent to (at-least-once: one that was not answered is delivered again to
 * the shard's next owner). Each command is idempotent — a send by its otid, a result by its call and
 * otid, a steer by its otid, a cancel by being safe twice — which is why only Drive and Steer carry a
 * primaryKey: a stored Conflict must not answer the same otid forever after its run ended.
 *
 * `Drive` is the run itself: a send (or compaction) admits its run, then leaves a Drive for it in the
 * cluster's storage, whose reply is stored only when the run has stopped. While it is unanswered the
 * run belongs to whoever owns the conversation's shard: when a runner dies its shards move, the Drive
 * is delivered to the new owner, whose actor adopts the run (the Adopt command) and continues it
 * from its committed chunks (a reconnect).
 */
export const ConversationEntity = Entity.make("Conversation", [
  Rpc.make("Send", { payload: { input: SendInputMessage }, success: RunId, error: BackendError }),
  Rpc.make("Drive", {
    payload: { runId: RunId, thinking: Schema.optional(ThinkingLevel) },
    primaryKey: ({ runId }) => runId,
    error: BackendError
  }),
  Rpc.make("Compact", { payload: { reason: CompactionReason }, success: RunId, error: BackendError }),
  Rpc.make("Cancel", { payload: { carryOver: Schema.optional(CarryOverMessage) }, error: BackendError }),
  Rpc.make("SubmitResult", {
    payload: Schema.Struct({ result: ToolReturn, decision: Schema.optional(ApprovalDecision) }),
    error: BackendError
  }),
  Rpc.make("Steer", { payload: { text: Schema.String, otid: Otid }, primaryKey: ({ otid }) => otid, error: BackendError }),
  // Only meaningful to a live wait: never stored, never delivered twice.
  Rpc.make("SkipReconnectWait", { error: BackendError }).annotate(ClusterSchema.Persisted, false),
  // A Drive's work for a run whose Drive the cluster read but never delivered (see StaleRuns): sent
  // straight to the owner, never stored, since the Drive it stands in for is stored already.
  // It runs at the conversation's thinking level: a send's own is in that Drive.
  Rpc.make("Resume", { payload: { runId: RunId }, error: BackendError }).annotate(ClusterSchema.Persisted, false)
]).annotateRpcs(ClusterSchema.Persisted, true)

/**
 * A Drive's work: the run is this runner's job until it has ended, whatever stopped a job of it
 * before. Its answer is stored for good, so it must not come while the run is `running`: a Drive
 * delivered again as a lost shard comes back — often to this same runner, while the job the lost
 * Drive interrupted is still stopping — would otherwise find that job, see it stop, and leave the
 * run `running` with no Drive left to adopt it, its followers waiting forever. For the same reason
 * a database out of reach (a pool that stayed full past its wait) is waited out, not answered.
 */
export const driveRun = (
  actors: Pick<ConversationActors, "awaitRun">,
  ask: (command: Command) => Effect.Effect<unknown, BackendError>,
  runId: RunId,
  thinking: ThinkingLevel | undefined
): Effect.Effect<void, BackendError> =>
  Effect.zipRight(ask(Command.Adopt({ runId, thinking })), actors.awaitRun(runId)).pipe(
    Effect.repeat({ until: (outcome) => outcome === "ended" }),
    Effect.retry(policy(driveBudgets)),
    Effect.asVoid
  )

/**
 * The entity over this runner's actors: each message is its command to the conversation's actor,
 * which the entity holds in the registry while it lives. `clock` is the backend's: the jobs a
 * command starts wait on it (reconnect waits), not on the runner's machinery's.
 */
export const layerHandlers = (actors: ConversationActors, registry: ActorRegistry, clock: Clock.Clock) =>
  ConversationEntity.toLayer(
    Effect.gen(function*() {
      const address = yield* Entity.CurrentAddress
      const id = ConversationId.make(address.entityId)
      const self = (yield* ConversationEntity.client)(address.entityId)
      yield* registry.hold(id).pipe(Effect.withClock(clock))
      const ask = <C extends Command>(command: C) => registry.ask(id, command).pipe(Effect.withClock(clock))
      const drive = (runId: RunId, thinking?: ThinkingLevel) =>
        // Saved before the admission is answered: from here on a lost runner's run is resumed, never stranded.
        Effect.orDie(self.Drive({ runId, ...(thinking !== undefined ? { thinking } : {}) }, { discard: true })).pipe(Effect.withClock(realClock))
      return ConversationEntity.of({
        Send: ({ payload }) => Effect.tap(ask(Command.Send({ input: payload.input })), (runId) => drive(runId, payload.input.thinking)),
        Drive: ({ payload }) => driveRun(actors, ask, payload.runId, payload.thinking).pipe(Effect.withClock(clock)),
        Resume: ({ payload }) => driveRun(actors, ask, payload.runId, undefined).pipe(Effect.withClock(clock)),
        Compact: ({ payload }) => Effect.tap(ask(Command.Compact({ reason: payload.reason })), (runId) => drive(runId)),
        Cancel: ({ payload }) => ask(Command.Cancel({ carryOver: payload.carryOver })),
        SubmitResult: ({ payload }) => ask(Command.SubmitResult({ result: payload.result, decision: payload.decision })),
        Steer: ({ payload }) => ask(Command.Steer(payload)),
        SkipReconnectWait: () => ask(Command.SkipReconnectWait())
      })
    }),
    // One actor per conversation orders the commands; a Drive waits out its run while the others go on.
    { concurrency: "unbounded" }
  )
