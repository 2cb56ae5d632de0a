import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { ConfigError } from "../../domain/Errors.js"
import { Decision } from "../../domain/Events.js"
import { ConversationId } from "../../domain/Ids.js"
import { UsageReport } from "../../domain/Usage.js"
import { documentEventStreams } from "../../services/backend/HttpApi.js"
import { ForbiddenJson, withBackendErrors } from "../../services/backend/HttpErrors.js"
import { VERSION } from "../../services/Version.js"

/**
 * The HTTP API of `baton web`'s page: its conversations, their tasks and questions, and the same
 * usage report `baton serve` gives. Errors are `baton serve`'s (the same statuses and `{ code,
 * message }` JSON). The page's files and its event stream are raw routes beside it (WebServer.ts).
 */

/** Text the user typed: surrounding whitespace dropped, and something must be left. */
const Typed = Schema.Trim.pipe(Schema.compose(Schema.NonEmptyString.annotations({ message: () => "the message is empty" })))

const Ok = Schema.Struct({ ok: Schema.Literal(true) }).annotations({ identifier: "Ok" })
const Accepted = Ok.annotations(HttpApiSchema.annotations({ status: 202 }))

/** What the page loads whole; their shapes are the page's own (Hosted.ts), not a protocol. */
const PageJson = (identifier: string, description: string) => Schema.Unknown.annotations({ identifier, description })

const EVENTS = "text/event-stream: the conversation's log (`message` and `state` events, id `<epoch>:<n>`), " +
  "from Last-Event-ID or `?after=`; `reset` when the id is another process's; `: heartbeat` comments"

const ConversationPath = Schema.Struct({ id: ConversationId })

/** A configuration the host cannot open a conversation with (500): the message says what to fix. */
export const ConfigErrorJson = Schema.transform(
  Schema.Struct({ code: Schema.Literal("config_error"), message: Schema.String, source: Schema.String }),
  ConfigError,
  {
    strict: true,
    decode: (w) => ({ _tag: "ConfigError" as const, source: w.source, message: w.message }),
    encode: (e) => ({ code: "config_error" as const, message: e.message, source: e.source })
  }
).annotations({ ...HttpApiSchema.annotations({ status: 500 }), identifier: "ConfigError" })

const host = HttpApiGroup.make("host")
  .add(HttpApiEndpoint.get("info", "/api/info").addSuccess(PageJson("HostInfo", "model, workspace, sandbox, project instructions, whether usage is priced")))
  .add(
    HttpApiEndpoint.get("usage", "/v1/usage")
      .setUrlParams(Schema.Struct({ conversation: Schema.optionalWith(ConversationId, { exact: true }) }))
      .addSuccess(UsageReport.annotations({ identifier: "UsageReport" }))
  )

const conversations = HttpApiGroup.make("conversations")
  .add(
    HttpApiEndpoint.get("list", "/api/conversations")
      .addSuccess(Schema.Struct({ workspace: Schema.String, conversations: Schema.Array(PageJson("Listed", "a root conversation with its badges")) }))
  )
  .add(
    HttpApiEndpoint.post("create", "/api/conversations").addSuccess(Schema.Struct({
      conversation: Schema.Struct({
        id: ConversationId,
        title: Schema.optionalWith(Schema.String, { exact: true }),
        created_at: Schema.Number,
        updated_at: Schema.Number
      })
    }))
  )
  .add(HttpApiEndpoint.get("get", "/api/conversations/:id").setPath(ConversationPath).addSuccess(PageJson("Snapshot", "what a page loads: items, usage, state, the log position to follow from")))
  .add(
    HttpApiEndpoint.get("subagents", "/api/conversations/:id/subagents").setPath(ConversationPath)
      .addSuccess(Schema.Struct({ subagents: Schema.Array(PageJson("Subagent", "a subagent with what it did, under its Task call")) }))
  )
  .add(HttpApiEndpoint.get("usage", "/api/conversations/:id/usage").setPath(ConversationPath).addSuccess(PageJson("PageUsage", "tokens and requests")))
  .add(
    HttpApiEndpoint.get("backfill", "/api/conversations/:id/backfill").setPath(ConversationPath)
      .addSuccess(Schema.Struct({ items: Schema.Array(PageJson("TaskEvent", "an event of the transcript")) }))
  )
  .add(
    HttpApiEndpoint.get("events", "/api/conversations/:id/events")
      .setPath(ConversationPath)
      .setUrlParams(Schema.Struct({ after: Schema.optionalWith(Schema.String, { exact: true }) }))
      .setHeaders(Schema.Struct({ "last-event-id": Schema.optionalWith(Schema.String, { exact: true }) }))
      .addSuccess(Schema.Void.annotations({ ...HttpApiSchema.annotations({ status: 200 }), description: EVENTS }))
  )

const tasks = HttpApiGroup.make("tasks")
  .add(
    HttpApiEndpoint.post("start", "/api/conversations/:id/tasks").setPath(ConversationPath)
      .setPayload(Schema.Struct({ prompt: Typed })).addSuccess(Accepted)
  )
  .add(
    HttpApiEndpoint.post("answer", "/api/conversations/:id/approvals/:call")
      .setPath(Schema.Struct({ id: ConversationId, call: Schema.NonEmptyTrimmedString }))
      .setPayload(Schema.Struct({ decision: Decision }))
      .addSuccess(Ok)
  )
  .add(
    HttpApiEndpoint.post("steer", "/api/conversations/:id/steer").setPath(ConversationPath)
      .setPayload(Schema.Struct({ text: Typed }))
      .addSuccess(Schema.Struct({ queued: Schema.Boolean.annotations({ description: "false: no task is running, send it as the next prompt" }) }))
  )
  .add(HttpApiEndpoint.post("title", "/api/conversations/:id/title").setPath(ConversationPath).addSuccess(Schema.Struct({ title: Schema.String })))
  .add(HttpApiEndpoint.post("interrupt", "/api/conversations/:id/interrupt").setPath(ConversationPath).addSuccess(Ok))
  .add(HttpApiEndpoint.post("skipWait", "/api/conversations/:id/skip-wait").setPath(ConversationPath).addSuccess(Ok))
  .add(HttpApiEndpoint.post("retry", "/api/conversations/:id/retry").setPath(ConversationPath).addSuccess(Accepted))

export class WebApi extends withBackendErrors(
  HttpApi.make("baton-web")
    .add(host)
    .add(conversations)
    .add(tasks)
)
  .addError(ForbiddenJson)
  .addError(ConfigErrorJson)
  .annotateContext(OpenApi.annotations({
    title: "Baton web",
    version: VERSION,
    description: "The API of `baton web`'s page. With a token, every request needs the page's session cookie " +
      "(set by opening `/?token=…`) or `Authorization: Bearer <token>`; a state-changing request from a browser " +
      "needs the page's own Origin.",
    transform: (spec) => documentEventStreams(spec, new Set(["conversations.events"]), EVENTS)
  }))
{}
