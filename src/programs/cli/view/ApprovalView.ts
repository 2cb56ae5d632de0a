import * as Effect from "effect/Effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Decision } from "../../../domain/Events.js"
import type { ApprovalRequest } from "../../session/ApprovalGate.js"
import { callDetails, callHeader, callPath } from "../../../domain/CallPreview.js"
import { diffLines } from "./EventView.js"
import type { Style } from "./Style.js"

/**
 * The approval question. It has no default: only a typed `y`, `a` or `n` (or the words) answers it,
 * so neither a stray Enter nor text typed for something else can approve a call.
 */
export const parseAnswer = (text: string): Decision | undefined => {
  switch (text.trim().toLowerCase()) {
    case "y":
    case "yes":
    case "once":
      return "allow"
    case "a":
    case "always":
      return "allow_always"
    case "n":
    case "no":
    case "deny":
      return "deny"
    default:
      return undefined
  }
}

const PREVIEW_LIMIT = 2 * 1024 * 1024

/** The file an Edit would change, as it is now (for the diff); undefined when it cannot be read. */
export const readForPreview = (workspace: string, request: ApprovalRequest): Effect.Effect<string | undefined> =>
  Effect.sync(() => {
    const path = request.call.name === "Edit" ? callPath(request.call) : undefined
    if (path === undefined) return undefined
    try {
      const absolute = Path.resolve(workspace, path)
      if (Fs.statSync(absolute).size > PREVIEW_LIMIT) return undefined
      return Fs.readFileSync(absolute, "utf8")
    } catch {
      return undefined
    }
  })

/** What the person sees before answering: the change (if any) and the three choices with the grant. */
/** What a call will do, beyond its one-line header: an Edit's diff, a Write's content, a command's description. */
export const previewLines = (request: ApprovalRequest, content: string | undefined, style: Style): ReadonlyArray<string> =>
  diffLines(callDetails(request.call, content), style)

/** `note`: what else the person should know about the tool (an MCP server's own hints). */
export const questionLines = (request: ApprovalRequest, content: string | undefined, style: Style, note?: string): ReadonlyArray<string> => {
  const header = callHeader(request.call)
  return [
    ...previewLines(request, content, style),
    ...(note !== undefined ? [`    ${style.dim(note)}`] : []),
    ...(request.classification.reason !== undefined ? [`    ${style.yellow(request.classification.reason)}`] : []),
    request.origin === undefined
      ? `  ${style.yellow("?")} ${style.bold(`Allow ${header.tool}`)} ${header.subject}`
      : `  ${style.yellow("?")} subagent «${request.origin.description}» wants to run ${style.bold(header.tool)} ${header.subject}`,
    `    ${style.bold("y")} once · ${style.bold("a")} always in this session (adds ${style.cyan(request.grant.text)}) · ${style.bold("n")} deny`
  ]
}

export const ANSWER_HINT = "type y, a or n and press Enter (Ctrl-C stops the task)"

export const answerLine = (decision: Decision, request: ApprovalRequest, style: Style): string =>
  decision === "deny"
    ? `  ${style.yellow("✗ denied")}`
    : decision === "allow_always"
    ? `  ${style.green(`✓ allowed for this session (${request.grant.text})`)}`
    : `  ${style.green("✓ allowed once")}`
