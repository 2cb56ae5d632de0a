import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import {
  ApprovalPending,
  type BackendError,
  Conflict,
  InvalidInput,
  InvalidToolCallIds,
  ModelCallFailed,
  NotFound,
  StoreError,
  StreamBroken,
  Unauthorized
} from "../../src/domain/Errors.js"
import { ConversationId, RunId, ToolCallId } from "../../src/domain/Ids.js"
import * as Wire from "../../src/services/backend/HttpErrors.js"

const conv = ConversationId.make("conv-1")

/** Every BackendError with the code and status it must have on the wire. */
const cases: ReadonlyArray<readonly [BackendError, string, number]> = [
  [new Conflict({ conversationId: conv, activity: "run", runId: RunId.make("run-1"), message: "busy" }), "conversation_busy", 409],
  [new Conflict({ conversationId: conv, activity: "compaction", message: "compacting" }), "conversation_busy", 409],
  [new ApprovalPending({ conversationId: conv, toolCallIds: [ToolCallId.make("c1")], message: "pending" }), "approval_pending", 409],
  [new InvalidToolCallIds({ conversationId: conv, unknown: [ToolCallId.make("zz")], missing: [], message: "ids" }), "invalid_tool_call_ids", 400],
  [new NotFound({ entity: "run", id: "run-9", message: "no run" }), "not_found", 404],
  [new InvalidInput({ message: "empty" }), "invalid_input", 400],
  [new Unauthorized({ message: "who?" }), "unauthorized", 401],
  [new StreamBroken({ message: "shutting down" }), "unavailable", 503],
  [new ModelCallFailed({ tag: "ProviderTimeout", message: "slow" }), "model_call_failed", 502],
  [new StoreError({ reason: "io", message: "busy", path: "/x.db" }), "store_unavailable", 503],
  [new StoreError({ reason: "closed", message: "closed" }), "store_unavailable", 503],
  [new StoreError({ reason: "corrupt", message: "bad file" }), "store_error", 500],
  [new StoreError({ reason: "newer_schema", message: "too new" }), "store_error", 500]
]

const schemas = [
  Wire.ConversationBusyJson,
  Wire.ApprovalPendingJson,
  Wire.InvalidToolCallIdsJson,
  Wire.NotFoundJson,
  Wire.InvalidInputJson,
  Wire.UnauthorizedJson,
  Wire.UnavailableJson,
  Wire.ModelCallFailedJson,
  Wire.StoreUnavailableJson,
  Wire.StoreFailedJson
] as const

// What the server and the derived client do: one union of every error schema.
const union = Schema.Union(...schemas)

describe("BackendHttpErrors", () => {
  it("every BackendError encodes to its stable code and status and decodes back to the same error", () => {
    for (const [error, code, status] of cases) {
      const json = Schema.encodeUnknownSync(union)(error) as { code: string }
      assert.strictEqual(json.code, code, error._tag)
      const matching = schemas.filter((s: Schema.Schema.AnyNoContext) => Schema.is(Schema.encodedSchema(s))(json))
      assert.deepStrictEqual(matching.map((s: Schema.Schema.AnyNoContext) => HttpApiSchema.getStatusError(s)), [status], code)
      assert.deepStrictEqual(Schema.decodeUnknownSync(union)(JSON.parse(JSON.stringify(json))), error)
    }
  })

  it("the wire is snake_case JSON without the domain tag", () => {
    const json = Schema.encodeSync(Wire.ConversationBusyJson)(cases[0]![0] as Conflict)
    assert.deepStrictEqual(json, { code: "conversation_busy", message: "busy", conversation_id: "conv-1", activity: "run", run_id: "run-1" })
  })
})
