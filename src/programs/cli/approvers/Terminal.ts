import * as Effect from "effect/Effect"
import * as Readline from "node:readline"
import type { Decision } from "../../../domain/Events.js"
import type { Approver } from "../../session/ApprovalGate.js"
import type { ApproveMode } from "../CommonArgs.js"
import { ANSWER_HINT, answerLine, parseAnswer, questionLines, readForPreview } from "../view/ApprovalView.js"
import { callLine } from "../view/EventView.js"
import type { Io } from "../Io.js"
import type { Style } from "../view/Style.js"

/**
 * The approvers: who answers a tool call the permission rules leave open. Here, those of the
 * non-interactive commands, picked by `--approve`: none (only the rules decide, the rest is denied),
 * allow-all, or a question on the terminal that only a typed y/a/n answers, and never on piped stdin.
 * Chat.ts is `baton chat`'s: the question under the call in the live view, answered on the input line.
 */

/** `--approve allow`: everything the rules do not deny (the rules are applied before any approver). */
export const allowAll: Approver = () => Effect.succeed("allow")

/** `--approve deny`: the user's own answer, given once for every call (the model hears it was the user). */
const denyAll: Approver = () => Effect.succeed("deny")

export const NOT_A_TTY_NOTE = "stdin is not a terminal, so no one can be asked: calls that need approval are denied (use --approve allow to allow them)"

/** One question on the terminal (stderr), answered on stdin; asks again until the answer is y, a or n. */
const askOnTerminal = (io: Io, question: string, style: Style): Effect.Effect<Decision> =>
  Effect.async<Decision>((resume) => {
    const rl = Readline.createInterface({ input: io.stdin, output: io.stderr, terminal: true })
    // Ctrl-C here must stop the task the way it does anywhere else: hand it to the process.
    rl.on("SIGINT", () => {
      rl.close()
      io.raiseInterrupt()
    })
    const ask = (prefix: string) =>
      rl.question(`${prefix}${question}`, (answer) => {
        const decision = parseAnswer(answer)
        if (decision === undefined) return ask(`  ${style.dim(ANSWER_HINT)}\n`)
        rl.close()
        resume(Effect.succeed(decision))
      })
    ask("")
    return Effect.sync(() => rl.close())
  })

/** A note for the question about a tool (an MCP server's hints). */
export type ToolNote = (name: string) => Effect.Effect<string | undefined>

/** Prompts on the terminal for `baton run --approve ask`. Never used unless stdin is a TTY. */
export const terminalApprover = (io: Io, workspace: string, style: Style, toolNote?: ToolNote): Approver => (request) =>
  Effect.gen(function*() {
    const content = yield* readForPreview(workspace, request)
    const note = toolNote === undefined ? undefined : yield* toolNote(request.call.name)
    io.err(`${[callLine(request.call, style), ...questionLines(request, content, style, note)].join("\n")}\n`)
    const decision = yield* askOnTerminal(io, `  answer (y/a/n) › `, style)
    io.err(`${answerLine(decision, request, style)}\n`)
    return decision
  })

/**
 * The approver of a non-interactive command. Without `--approve`, only the rules decide (whatever
 * they leave open is denied). `ask` prompts only on a terminal: on piped or closed stdin a prompt
 * could read a stray newline as an answer, so nothing is ever approved that way.
 */
export const commandApprover = (mode: ApproveMode | undefined, io: Io, workspace: string, style: Style, toolNote?: ToolNote): {
  readonly approver: Approver | undefined
  readonly note?: string
} => {
  switch (mode) {
    case "allow":
      return { approver: allowAll }
    case "deny":
      return { approver: denyAll }
    case "ask":
      return io.stdinTTY ? { approver: terminalApprover(io, workspace, style, toolNote) } : { approver: undefined, note: NOT_A_TTY_NOTE }
    default:
      return { approver: undefined }
  }
}
