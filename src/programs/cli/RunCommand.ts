import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { ConversationSettingsInput } from "../../domain/Conversation.js"
import { type BackendError, ConfigError } from "../../domain/Errors.js"
import type { ImagePart } from "../../domain/Messages.js"
import type { Backend } from "../../services/Backend.js"
import { McpClients } from "../../services/McpClients.js"
import { ToolExecutor } from "../../services/ToolExecutor.js"
import { describeSandbox, sandboxInfo, sandboxOff } from "../../domain/Sandbox.js"
import { open } from "../session/Session.js"
import { commandApprover } from "./approvers/Terminal.js"
import { type AppEnv, conversationSettings, maxTurns } from "./Env.js"
import { instructionsNote } from "./ProjectInstructions.js"
import { CommandExit, ExitCode, exitCodeFor, type Outcome, stepOutcome } from "./ExitCode.js"
import type { Io } from "./Io.js"
import { reportMcp, toolNote } from "./McpReport.js"
import { selectConversation } from "./SelectConversation.js"
import type { ViewOptions } from "./view/EventView.js"
import { colorFor, makeStyle } from "./view/Style.js"
import { makeTaskPrinter } from "./view/TaskOutput.js"

export interface TaskRequest {
  readonly env: AppEnv
  readonly prompt: ReadonlyArray<string>
  readonly json: boolean
  /** Overrides for a new conversation (a replay needs the recorded system prompt and model). */
  readonly settings?: Omit<ConversationSettingsInput, "tools" | "workspace">
  readonly view?: Partial<ViewOptions>
  /** false: the model is not offered `Task` (a replay of a recording made without it). */
  readonly subagents?: boolean
  /** Attached to the prompt (`--image FILE`). */
  readonly images?: ReadonlyArray<ImagePart>
}

/**
 * One task, non-interactively: `baton run` and `baton replay`. Ctrl-C (SIGINT) interrupts the
 * task the way the Session does it (tools stopped, carry-over recorded) and the rest of the stream,
 * down to its `abort`, is still printed before the process exits 130.
 */
export const runTask: (io: Io, request: TaskRequest) => Effect.Effect<
  void,
  BackendError | ConfigError | CommandExit,
  Backend | ToolExecutor | McpClients | Scope.Scope
> = Effect.fn("Cli.run")(function*(io: Io, request: TaskRequest) {
  const { env } = request
  const style = makeStyle(colorFor({ isTTY: io.stderrTTY }, io.env))
  const sandbox = (yield* ToolExecutor).sandbox ?? sandboxOff
  const printer = makeTaskPrinter(io, request.json, {
    ...(env.args.approve === "allow" ? { userLabel: "(--approve allow)" } : {}),
    ...request.view
  }, { sandbox: sandboxInfo(sandbox) })
  // Said once, plainly: no sandbox where one was asked for or would be the default.
  if (sandbox.unavailable !== undefined && !request.json) io.err(`${style.yellow(`baton: ${describeSandbox(sandbox)}`)}\n`)
  const notes = (text: string) => (request.json ? undefined : io.err(`${style.dim(text)}\n`))
  const mcp = yield* McpClients
  // Even with --json (stderr is not the event stream): a missing server explains a missing tool.
  yield* reportMcp(mcp, (text) => Effect.sync(() => io.err(`${style.yellow(`baton: ${text}`)}\n`)))
  const selected = yield* selectConversation(env)
  if (selected.note !== undefined) notes(selected.note)
  const instructions = selected.id === undefined && request.settings?.system_prompt === undefined
    ? instructionsNote(env.instructions, env.workspace)
    : undefined
  if (instructions !== undefined) notes(instructions)
  const approval = commandApprover(env.args.approve, io, env.workspace, style, (name) => Effect.map(mcp.servers, (servers) => toolNote(servers, name)))
  if (approval.note !== undefined && !request.json) io.err(`${style.yellow(approval.note)}\n`)
  const session = yield* open({
    ...(selected.id !== undefined ? { conversationId: selected.id } : {}),
    rules: env.settings.rules,
    ...(env.settings.file.agents !== undefined ? { agents: env.settings.file.agents } : {}),
    ...(request.subagents !== undefined ? { subagents: request.subagents } : {}),
    ...(approval.approver !== undefined ? { approver: approval.approver } : {}),
    settings: { ...conversationSettings(env), ...request.settings }
  })
  const turns = maxTurns(env)
  const leftOver = new Map((yield* session.pendingApprovals).map((call) => [call.tool_call_id, call] as const))
  if (request.prompt.length === 0 && leftOver.size === 0) {
    return yield* new ConfigError({
      source: "command line",
      field: "prompt",
      message: `nothing is waiting in conversation ${session.conversationId}: give a prompt to continue it`
    })
  }
  let outcome: Outcome = undefined
  const consumer = yield* session.run(request.prompt, {
    ...(turns !== undefined ? { maxTurns: turns } : {}),
    ...(request.images !== undefined && request.images.length > 0 ? { images: request.images } : {})
  }).pipe(
    Stream.runForEachChunk((events) =>
      Effect.sync(() => {
        for (const event of events) outcome = stepOutcome(outcome, event)
        printer.print(events)
        for (const event of events) {
          const call = event.type === "approval_decision" && event.decision === "deny" ? leftOver.get(event.tool_call_id) : undefined
          // Even with --json (stderr is not the event stream): a left-over call denied must not pass unnoticed.
          if (call !== undefined && event.type === "approval_decision") {
            io.err(`${style.yellow(`baton: the call left waiting by an earlier process, ${call.name} (${call.tool_call_id}), was denied: ${
              event.source === "default" && approval.note !== undefined ? approval.note : event.reason ?? "no reason given"
            }`)}\n`)
          }
        }
      })
    ),
    Effect.ensuring(Effect.sync(() => printer.finish())),
    Effect.forkScoped
  )
  // The consumer is not interrupted with us: it reads on to the `abort` the interrupt produces.
  yield* Fiber.join(consumer).pipe(
    Effect.onInterrupt(() => Effect.zipRight(session.interrupt, Fiber.await(consumer)))
  )
  notes(`conversation ${session.conversationId}`)
  const code = exitCodeFor(outcome)
  if (code !== ExitCode.ok) return yield* new CommandExit({ code })
})
