import { Either, type ParseResult, Schema } from "effect"
import { TaskEvent, TaskEventFromJson } from "./Events.js"

/**
 * The JSON text of a task event, as the store keeps it, the server sends it and `--json` prints it:
 * exactly what `Schema.encode(TaskEventFromJson)` writes and `Schema.decode` reads. Deltas are
 * nearly every chunk of a run, and the schema walks an 18-member union for each one; their shapes are
 * flat, so they are written and read here directly, to the same bytes and the same values, and
 * everything else (and any delta that would not validate) goes through the schema.
 */

const encodeSchema = Schema.encodeSync(TaskEventFromJson)
const decodeText = Schema.decodeUnknownEither(TaskEventFromJson)
const decodeValue = Schema.decodeUnknownEither(TaskEvent)

const quote = JSON.stringify

// The last run id written and its `,"run_id":…` text: a run's chunks all carry the same one.
let lastRunId: string | undefined
let lastRunIdField = ""

const runIdField = (runId: string): string => {
  if (runId !== lastRunId) {
    lastRunIdField = `,"run_id":${quote(runId)}`
    lastRunId = runId
  }
  return lastRunIdField
}

/** run_id and seq close every event's field list (Envelope), when present. */
const envelope = (event: TaskEvent): string =>
  (event.run_id !== undefined ? runIdField(event.run_id) : "") + (event.seq !== undefined ? `,"seq":${event.seq}` : "")

/** The event's JSON, field order as the schema declares it. */
export const encodeEventJson = (event: TaskEvent): string => {
  switch (event.type) {
    case "text_delta":
    case "reasoning_delta":
      return `{"type":"${event.type}","content":${quote(event.content)}${envelope(event)}}`
    case "tool_call_delta":
      return `{"type":"tool_call_delta","tool_call_id":${quote(event.tool_call_id)},"name":${quote(event.name)},"arguments":${
        quote(event.arguments)
      }${envelope(event)}}`
    default:
      return encodeSchema(event)
  }
}

const isTrimmedId = (value: unknown): value is string => typeof value === "string" && value.length > 0 && value === value.trim()

const isSeq = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value) && value > 0

type Json = Record<string, unknown>

/** The envelope of a parsed delta, or undefined when it would not validate. */
const parsedEnvelope = (json: Json): { readonly run_id?: string; readonly seq?: number } | undefined => {
  const { run_id, seq } = json
  if (run_id !== undefined && !isTrimmedId(run_id)) return undefined
  if (seq !== undefined && !isSeq(seq)) return undefined
  return { ...(run_id !== undefined ? { run_id } : {}), ...(seq !== undefined ? { seq } : {}) }
}

/** A delta read directly, or undefined to let the schema decide (and explain). */
const fastDelta = (json: Json): TaskEvent | undefined => {
  const type = json["type"]
  if (type === "text_delta" || type === "reasoning_delta") {
    const content = json["content"]
    if (typeof content !== "string") return undefined
    const env = parsedEnvelope(json)
    return env === undefined ? undefined : { type, content, ...env } as TaskEvent
  }
  if (type === "tool_call_delta") {
    const { arguments: args, name, tool_call_id } = json
    if (typeof tool_call_id !== "string" || tool_call_id.length === 0 || typeof name !== "string" || typeof args !== "string") return undefined
    const env = parsedEnvelope(json)
    return env === undefined ? undefined : { type, tool_call_id, name, arguments: args, ...env } as TaskEvent
  }
  return undefined
}

/** Parses one event's JSON text; failures are the schema's own ParseError. */
export const decodeEventJson = (text: string): Either.Either<TaskEvent, ParseResult.ParseError> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return decodeText(text)
  }
  if (typeof json === "object" && json !== null && !Array.isArray(json)) {
    const fast = fastDelta(json as Json)
    if (fast !== undefined) return Either.right(fast)
  }
  return decodeValue(json)
}
