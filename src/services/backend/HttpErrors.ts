import type * as HttpApi from "@effect/platform/HttpApi"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { ParseResult, Schema } from "effect"
import {
  ApprovalPending,
  Conflict,
  InvalidInput,
  InvalidToolCallIds,
  ModelCallFailed,
  NoTaskRunning,
  NotFound,
  StoreError,
  StreamBroken,
  ToolCallAnswered,
  Unauthorized
} from "../../domain/Errors.js"

/**
 * The wire form of every BackendError: JSON with a stable snake_case `code`, decoded back into the
 * same domain tagged error on the client, so a Session sees identical errors over either backend.
 * The wire fields stay plain strings; the domain class validates ids when it decodes.
 */

const wire = <const Code extends string, Fields extends Schema.Struct.Fields>(code: Code, fields: Fields) =>
  Schema.Struct({ code: Schema.Literal(code), message: Schema.String, ...fields })

const http = <A>(status: number, identifier: string): Schema.Annotations.Schema<A> => ({
  ...HttpApiSchema.annotations<A>({ status }),
  identifier
})

export const ConversationBusyJson = Schema.transform(
  wire("conversation_busy", {
    conversation_id: Schema.String,
    activity: Schema.Literal("run", "compaction"),
    run_id: Schema.optionalWith(Schema.String, { exact: true })
  }),
  Conflict,
  {
    strict: true,
    decode: (w) => ({
      _tag: "Conflict" as const,
      conversationId: w.conversation_id,
      activity: w.activity,
      message: w.message,
      ...(w.run_id === undefined ? {} : { runId: w.run_id })
    }),
    encode: (e) => ({
      code: "conversation_busy" as const,
      message: e.message,
      conversation_id: e.conversationId,
      activity: e.activity,
      ...(e.runId === undefined ? {} : { run_id: e.runId })
    })
  }
).annotations(http(409, "ConversationBusy"))

export const ApprovalPendingJson = Schema.transform(
  wire("approval_pending", { conversation_id: Schema.String, tool_call_ids: Schema.Array(Schema.String) }),
  ApprovalPending,
  {
    strict: true,
    decode: (w) => ({ _tag: "ApprovalPending" as const, conversationId: w.conversation_id, toolCallIds: w.tool_call_ids, message: w.message }),
    encode: (e) => ({ code: "approval_pending" as const, message: e.message, conversation_id: e.conversationId, tool_call_ids: e.toolCallIds })
  }
).annotations(http(409, "ApprovalPending"))

export const InvalidToolCallIdsJson = Schema.transform(
  wire("invalid_tool_call_ids", {
    conversation_id: Schema.String,
    unknown: Schema.Array(Schema.String),
    missing: Schema.Array(Schema.String)
  }),
  InvalidToolCallIds,
  {
    strict: true,
    decode: (w) => ({
      _tag: "InvalidToolCallIds" as const,
      conversationId: w.conversation_id,
      unknown: w.unknown,
      missing: w.missing,
      message: w.message
    }),
    encode: (e) => ({
      code: "invalid_tool_call_ids" as const,
      message: e.message,
      conversation_id: e.conversationId,
      unknown: e.unknown,
      missing: e.missing
    })
  }
).annotations(http(400, "InvalidToolCallIds"))

export const ToolCallAnsweredJson = Schema.transform(
  wire("tool_call_answered", { conversation_id: Schema.String, tool_call_id: Schema.String }),
  ToolCallAnswered,
  {
    strict: true,
    decode: (w) => ({ _tag: "ToolCallAnswered" as const, conversationId: w.conversation_id, toolCallId: w.tool_call_id, message: w.message }),
    encode: (e) => ({ code: "tool_call_answered" as const, message: e.message, conversation_id: e.conversationId, tool_call_id: e.toolCallId })
  }
).annotations(http(409, "ToolCallAnswered"))

/** Steering for a conversation with no task running: send it as a prompt instead. */
export const NoTaskJson = Schema.transform(wire("no_task", { conversation_id: Schema.String }), NoTaskRunning, {
  strict: true,
  decode: (w) => ({ _tag: "NoTaskRunning" as const, conversationId: w.conversation_id, message: w.message }),
  encode: (e) => ({ code: "no_task" as const, message: e.message, conversation_id: e.conversationId })
}).annotations(http(409, "NoTask"))

export const NotFoundJson = Schema.transform(
  wire("not_found", { entity: Schema.Literal("conversation", "run", "message", "segment"), id: Schema.String }),
  NotFound,
  {
    strict: true,
    decode: (w) => ({ _tag: "NotFound" as const, entity: w.entity, id: w.id, message: w.message }),
    encode: (e) => ({ code: "not_found" as const, message: e.message, entity: e.entity, id: e.id })
  }
).annotations(http(404, "NotFound"))

export const InvalidInputJson = Schema.transform(wire("invalid_input", {}), InvalidInput, {
  strict: true,
  decode: (w) => ({ _tag: "InvalidInput" as const, message: w.message }),
  encode: (e) => ({ code: "invalid_input" as const, message: e.message })
}).annotations(http(400, "InvalidInput"))

/** A request body over the server's limit (413): the same InvalidInput on the client, with its own code. */
export const PayloadTooLargeJson = Schema.transform(wire("payload_too_large", {}), InvalidInput, {
  strict: true,
  decode: (w) => ({ _tag: "InvalidInput" as const, message: w.message }),
  encode: (e) => ({ code: "payload_too_large" as const, message: e.message })
}).annotations(http(413, "PayloadTooLarge"))

export const UnauthorizedJson = Schema.transform(wire("unauthorized", {}), Unauthorized, {
  strict: true,
  decode: (w) => ({ _tag: "Unauthorized" as const, message: w.message }),
  encode: (e) => ({ code: "unauthorized" as const, message: e.message })
}).annotations(http(401, "Unauthorized"))

/** A server that cannot serve now (it is shutting down): the client treats it like a dropped connection. */
export const UnavailableJson = Schema.transform(
  wire("unavailable", { run_id: Schema.optionalWith(Schema.String, { exact: true }) }),
  StreamBroken,
  {
    strict: true,
    decode: (w) => ({ _tag: "StreamBroken" as const, message: w.message, ...(w.run_id === undefined ? {} : { runId: w.run_id }) }),
    encode: (e) => ({ code: "unavailable" as const, message: e.message, ...(e.runId === undefined ? {} : { run_id: e.runId }) })
  }
).annotations(http(503, "Unavailable"))

export const ModelCallFailedJson = Schema.transform(wire("model_call_failed", { tag: Schema.String }), ModelCallFailed, {
  strict: true,
  decode: (w) => ({ _tag: "ModelCallFailed" as const, tag: w.tag, message: w.message }),
  encode: (e) => ({ code: "model_call_failed" as const, message: e.message, tag: e.tag })
}).annotations(http(502, "ModelCallFailed"))

const transientStoreReasons = ["io", "closed"] as const
const permanentStoreReasons = ["corrupt", "newer_schema", "read_only"] as const

/** A store error split by status: `io`/`closed` may pass (503), the others need an operator (500). */
const storeErrorJson = <const Code extends string, const Reasons extends ReadonlyArray<StoreError["reason"]>>(
  code: Code,
  reasons: Reasons,
  status: number,
  identifier: string
) =>
  Schema.transformOrFail(
    wire(code, {
      reason: Schema.Literal(...reasons),
      path: Schema.optionalWith(Schema.String, { exact: true })
    }),
    StoreError,
    {
      strict: true,
      decode: (w) =>
        ParseResult.succeed({
          _tag: "StoreError" as const,
          reason: w.reason,
          message: w.message,
          ...(w.path === undefined ? {} : { path: w.path })
        }),
      encode: (e, _, ast) => {
        const reason = reasons.find((r) => r === e.reason)
        return reason === undefined
          ? ParseResult.fail(new ParseResult.Type(ast, e, `not a ${code} reason`))
          : ParseResult.succeed({ code, message: e.message, reason, ...(e.path === undefined ? {} : { path: e.path }) })
      }
    }
  ).annotations(http(status, identifier))

export const StoreUnavailableJson = storeErrorJson("store_unavailable", transientStoreReasons, 503, "StoreUnavailable")
export const StoreFailedJson = storeErrorJson("store_error", permanentStoreReasons, 500, "StoreFailed")

/** A request refused before it reaches the API (a foreign Host or Origin): the gate of `baton web`'s page. */
export const ForbiddenJson = wire("forbidden", {}).annotations(http(403, "Forbidden"))

/**
 * Every BackendError's wire form, each with its status: what both front-ends (`baton serve`'s API and
 * `baton web`'s) answer an error with. An error answers with the first whose domain side it is.
 */
export const withBackendErrors = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(api: HttpApi.HttpApi<Id, Groups, E, R>) =>
  api
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
