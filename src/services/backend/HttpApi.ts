import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema, SchemaAST as AST } from "effect"
import { Conversation, ConversationSettings, ParentLink } from "../../domain/Conversation.js"
import { ApprovalDecision, CompactionReason, TaskEvent } from "../../domain/Events.js"
import { ConversationId, MessageId, Otid, RunId } from "../../domain/Ids.js"
import { InputMessage, ToolCall, ToolReturn, UserMessage } from "../../domain/Messages.js"
import { ThinkingLevel } from "../../domain/ProviderEvent.js"
import { UsageReport } from "../../domain/Usage.js"
import { RunInfo } from "../../domain/Run.js"
import {
  ApprovalPendingJson,
  ConversationBusyJson,
  InvalidInputJson,
  InvalidToolCallIdsJson,
  ModelCallFailedJson,
  NoTaskJson,
  NotFoundJson,
  PayloadTooLargeJson,
  StoreFailedJson,
  StoreUnavailableJson,
  ToolCallAnsweredJson,
  UnauthorizedJson,
  UnavailableJson
} from "./HttpErrors.js"

/**
 * The HTTP API of `baton serve`, shared by the server (handlers) and `layerRemote` (the derived client).
 * Run streams are `text/event-stream`: HttpApi v3 has no SSE schema, so they are declared as an empty 200
 * and the handler returns a raw streaming response (research/effect3-verified.md §6). Each SSE event's
 * `data:` is one chunk as `TaskEvent` encodes it and its `id:` is `<runId>:<seq>`.
 */

const Int = Schema.NumberFromString.pipe(Schema.int())
const NonNegativeInt = Int.pipe(Schema.nonNegative())
const Segment = Int.pipe(Schema.greaterThanOrEqualTo(1)).annotations({ description: "a trace segment: 1, 2, 3…" })

/** Request bodies are read strictly: a field the API does not know is an error, never silently dropped. */
const strict = <Fields extends Schema.Struct.Fields>(schema: Schema.Struct<Fields>) =>
  schema.annotations({ parseOptions: { onExcessProperty: "error" } })

const EventStream = Schema.Void.annotations({
  ...HttpApiSchema.annotations({ status: 200 }),
  description: "text/event-stream: one chunk (TaskEvent JSON) per event, id `<runId>:<seq>`, ending with its stop_reason; `: heartbeat` comments every 15 s by default"
})

const ConversationPath = Schema.Struct({ id: ConversationId })

// Named, so the OpenAPI document shows them once as components.
const ConversationJson = Conversation.annotations({ identifier: "Conversation" })
const TaskEventJson = TaskEvent.annotations({ identifier: "TaskEvent" })
const ToolCallJson = ToolCall.annotations({ identifier: "ToolCall" })

export const ConversationPage = Schema.Struct({
  items: Schema.Array(ConversationJson),
  next: Schema.optionalWith(Schema.String, { exact: true })
})

const snake = <S extends Schema.Schema.Any>(schema: S, key: string) => Schema.propertySignature(schema).pipe(Schema.fromKey(key))

/** A recorded item (Store.StoredItem) with snake_case keys on the wire. */
export const StoredItemJson = Schema.Struct({
  id: MessageId,
  conversationId: snake(ConversationId, "conversation_id"),
  position: Schema.Int,
  segment: Schema.Int,
  inContext: snake(Schema.Boolean, "in_context"),
  inTrace: snake(Schema.Boolean, "in_trace"),
  item: TaskEventJson,
  createdAt: snake(Schema.Int, "created_at")
}).annotations({ identifier: "StoredItem" })

/** Backend.SendInput. */
export const SendInputJson = strict(Schema.Struct({
  messages: Schema.Array(InputMessage),
  events: Schema.optionalWith(Schema.Array(ApprovalDecision), { exact: true }),
  thinking: Schema.optionalWith(ThinkingLevel, { exact: true }),
  retry: Schema.optionalWith(Otid, { exact: true }),
  reconnects_spent: Schema.optionalWith(Schema.NonNegativeInt, { exact: true })
}))

/** Backend.submitResult: one tool result as its tool finished, with the decision that let it run. */
export const SubmitResultJson = strict(Schema.Struct({
  result: ToolReturn,
  decision: Schema.optionalWith(ApprovalDecision, { exact: true })
}))

/** Backend.CarryOver; the whole body may be omitted. */
export const CarryOverJson = strict(Schema.Struct({
  results: Schema.optionalWith(Schema.Array(ToolReturn), { exact: true }),
  turnAborted: Schema.optionalWith(Schema.String, { exact: true }).pipe(Schema.fromKey("turn_aborted")),
  events: Schema.optionalWith(Schema.Array(ApprovalDecision), { exact: true }),
  abort: Schema.optionalWith(Schema.Boolean, { exact: true })
}))

/** A new conversation; without `settings` (or without any body) it gets the server's defaults. */
export const CreateConversationJson = strict(Schema.Struct({
  settings: Schema.optionalWith(ConversationSettings, { exact: true }),
  title: Schema.optionalWith(Schema.String, { exact: true }),
  /** A subagent's conversation: the same link again returns the conversation it made. */
  parent: Schema.optionalWith(ParentLink, { exact: true })
}))

/** Backend.fork; the whole body may be omitted (fork at the end). */
export const ForkJson = strict(Schema.Struct({ at: Schema.optionalWith(NonNegativeInt, { exact: true }) }))

const conversations = HttpApiGroup.make("conversations")
  .add(
    HttpApiEndpoint.post("create", "/v1/conversations")
      .setPayload(CreateConversationJson)
      .addSuccess(ConversationJson, { status: 201 })
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/conversations")
      .setUrlParams(Schema.Struct({
        limit: Schema.optionalWith(Int, { exact: true }),
        before: Schema.optionalWith(Schema.String, { exact: true }),
        parent: Schema.optionalWith(ConversationId, { exact: true }),
        roots: Schema.optionalWith(Schema.BooleanFromString, { exact: true })
      }))
      .addSuccess(ConversationPage)
  )
  .add(HttpApiEndpoint.get("get", "/v1/conversations/:id").setPath(ConversationPath).addSuccess(ConversationJson))
  .add(
    HttpApiEndpoint.patch("update", "/v1/conversations/:id")
      .setPath(ConversationPath)
      .setPayload(strict(Schema.Struct({
        settings: Schema.optionalWith(ConversationSettings, { exact: true }),
        title: Schema.optionalWith(Schema.String, { exact: true })
      })))
      .addSuccess(ConversationJson)
  )
  .add(
    HttpApiEndpoint.get("pendingApprovals", "/v1/conversations/:id/pending-approvals")
      .setPath(ConversationPath)
      .addSuccess(Schema.Array(ToolCallJson))
  )
  .add(
    HttpApiEndpoint.post("submitResult", "/v1/conversations/:id/tool-results")
      .setPath(ConversationPath)
      .setPayload(SubmitResultJson)
      .addSuccess(Schema.Void, { status: 204 })
  )
  .add(
    HttpApiEndpoint.get("history", "/v1/conversations/:id/messages")
      .setPath(ConversationPath)
      .setUrlParams(Schema.Struct({
        before: Schema.optionalWith(NonNegativeInt, { exact: true }),
        after: Schema.optionalWith(NonNegativeInt, { exact: true }),
        limit: Schema.optionalWith(Int, { exact: true })
      }))
      .addSuccess(Schema.Array(StoredItemJson))
  )
  .add(HttpApiEndpoint.get("backfill", "/v1/conversations/:id/backfill").setPath(ConversationPath).addSuccess(Schema.Array(StoredItemJson)))
  .add(HttpApiEndpoint.post("skipReconnectWait", "/v1/conversations/:id/skip-reconnect-wait").setPath(ConversationPath))
  .add(
    HttpApiEndpoint.get("compactability", "/v1/conversations/:id/compactability")
      .setPath(ConversationPath)
      .addSuccess(Schema.Struct({ compactability: Schema.Literal("ok", "busy", "unsupported", "empty", "just_compacted") }))
  )
  .add(
    HttpApiEndpoint.post("generateTitle", "/v1/conversations/:id/title")
      .setPath(ConversationPath)
      .addSuccess(Schema.Struct({ title: Schema.String }))
  )
  .add(
    HttpApiEndpoint.post("fork", "/v1/conversations/:id/fork")
      .setPath(ConversationPath)
      .setPayload(ForkJson)
      .addSuccess(ConversationJson, { status: 201 })
  )
  .add(
    HttpApiEndpoint.post("steer", "/v1/conversations/:id/steering")
      .setPath(ConversationPath)
      .setPayload(strict(Schema.Struct({ text: Schema.String })))
      .addSuccess(Schema.Void, { status: 204 })
  )
  .add(
    HttpApiEndpoint.get("heldSteering", "/v1/conversations/:id/steering")
      .setPath(ConversationPath)
      .addSuccess(Schema.Array(UserMessage))
  )
  .add(
    HttpApiEndpoint.post("takeSteering", "/v1/conversations/:id/steering/take")
      .setPath(ConversationPath)
      .addSuccess(Schema.Array(UserMessage))
  )
  .add(
    HttpApiEndpoint.get("trace", "/v1/conversations/:id/trace/:segment")
      .setPath(Schema.Struct({ id: ConversationId, segment: Segment }))
      .addSuccess(HttpApiSchema.Text({ contentType: "application/x-ndjson" }))
  )

const runs = HttpApiGroup.make("runs")
  .add(
    HttpApiEndpoint.post("send", "/v1/conversations/:id/messages")
      .setPath(ConversationPath)
      .setPayload(SendInputJson)
      .addSuccess(EventStream)
  )
  .add(
    HttpApiEndpoint.post("compact", "/v1/conversations/:id/compact")
      .setPath(ConversationPath)
      .setPayload(strict(Schema.Struct({ reason: CompactionReason })))
      .addSuccess(EventStream)
  )
  .add(HttpApiEndpoint.post("cancel", "/v1/conversations/:id/cancel").setPath(ConversationPath).setPayload(CarryOverJson))
  .add(HttpApiEndpoint.get("getRun", "/v1/runs/:id").setPath(Schema.Struct({ id: RunId })).addSuccess(RunInfo.annotations({ identifier: "Run" })))
  .add(
    HttpApiEndpoint.get("stream", "/v1/runs/:id/stream")
      .setPath(Schema.Struct({ id: RunId }))
      .setUrlParams(Schema.Struct({ after: Schema.optionalWith(NonNegativeInt, { exact: true }) }))
      .setHeaders(Schema.Struct({ "last-event-id": Schema.optionalWith(Schema.String, { exact: true }) }))
      .addSuccess(EventStream)
  )

const usage = HttpApiGroup.make("usage").add(
  HttpApiEndpoint.get("usage", "/v1/usage")
    .setUrlParams(Schema.Struct({
      conversation: Schema.optionalWith(ConversationId, { exact: true }),
      since: Schema.optionalWith(NonNegativeInt.annotations({ description: "ms since the epoch" }), { exact: true })
    }))
    .addSuccess(UsageReport.annotations({ identifier: "UsageReport" }))
)

/** `runner` only on `serve --cluster`: this runner's address and the shards (1…300) it holds now. */
export const Health = Schema.Struct({
  status: Schema.Literal("ok"),
  runner: Schema.optionalWith(Schema.Struct({ address: Schema.String, shards: Schema.Array(Schema.Int) }), { exact: true })
}).annotations({ identifier: "Health" })

const health = HttpApiGroup.make("health").add(
  HttpApiEndpoint.get("healthz", "/healthz").addSuccess(Health)
)

const SSE_OPERATIONS: ReadonlySet<string> = new Set(["runs.send", "runs.compact", "runs.stream"])
const PUBLIC_OPERATIONS: ReadonlySet<string> = new Set(["health.healthz"])

/**
 * What HttpApi v3 cannot declare: the bearer scheme (checked by the server's gate, not per endpoint)
 * and the `text/event-stream` bodies of the run streams.
 */
type Json = Record<string, unknown>
const isJson = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)
const entries = (u: unknown): ReadonlyArray<Json> => (isJson(u) ? Object.values(u).filter(isJson) : [])

const documentProtocol = (spec: Json): Json => {
  for (const item of entries(spec.paths)) {
    for (const operation of entries(item)) {
      const id = String(operation.operationId)
      operation.security = PUBLIC_OPERATIONS.has(id) ? [] : [{ bearer: [] }]
      if (SSE_OPERATIONS.has(id) && isJson(operation.responses)) {
        operation.responses["200"] = {
          description: EventStream.ast.annotations[AST.DescriptionAnnotationId],
          content: { "text/event-stream": { schema: { type: "string" } } }
        }
      }
    }
  }
  const components = isJson(spec.components) ? spec.components : {}
  return { ...spec, components: { ...components, securitySchemes: { bearer: { type: "http", scheme: "bearer" } } } }
}

export class BatonApi extends HttpApi.make("baton")
  .add(conversations)
  .add(runs)
  .add(usage)
  .add(health)
  .addError(ConversationBusyJson)
  .addError(ApprovalPendingJson)
  .addError(InvalidToolCallIdsJson)
  .addError(ToolCallAnsweredJson)
  .addError(NoTaskJson)
  .addError(NotFoundJson)
  .addError(InvalidInputJson)
  .addError(PayloadTooLargeJson)
  .addError(UnauthorizedJson)
  .addError(UnavailableJson)
  .addError(ModelCallFailedJson)
  .addError(StoreUnavailableJson)
  .addError(StoreFailedJson)
  .annotateContext(OpenApi.annotations({
    title: "Baton",
    version: "0.1.0",
    description: "The conversation backend of `baton serve`. With a token, every endpoint but /healthz needs `Authorization: Bearer <token>`.",
    transform: (spec) => documentProtocol(spec)
  }))
{}
