import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type { Decision } from "../../../domain/Events.js"
import type { Approver } from "../../session/ApprovalGate.js"
import { ANSWER_HINT, answerLine, parseAnswer, questionLines, readForPreview } from "../view/ApprovalView.js"
import type { LineEditor } from "../view/LineEditor.js"
import { type LiveView, shownKey } from "../view/LiveView.js"
import type { Style } from "../view/Style.js"

/**
 * Approval in `chat`: the question appears under the call (with the diff for an Edit), the input line
 * becomes `allow? y/a/n`, and only a typed answer decides. What was half-typed for steering is put
 * aside meanwhile, so it can never become the answer.
 */
export interface ChatApproval {
  readonly approver: Approver
  /** Hands a typed line to the open question; false when no question is open. */
  readonly answer: (line: string) => Effect.Effect<boolean>
}

export const makeChatApproval = (options: {
  readonly view: LiveView
  readonly editor: LineEditor
  readonly style: Style
  readonly workspace: string
  readonly prompt: string
  /** Said above the first question only (what the rules already allow without asking). */
  readonly firstNote?: string
  /** A note for the question about this tool (an MCP server's hints). */
  readonly toolNote?: (name: string) => Effect.Effect<string | undefined>
}): Effect.Effect<ChatApproval> =>
  Effect.map(Ref.make<Option.Option<Deferred.Deferred<Decision>>>(Option.none()), (pending) => {
    const { editor, style, view } = options
    let first = true
    const approver: Approver = (request) =>
      Effect.gen(function*() {
        yield* view.awaitShown(shownKey(request.call.tool_call_id, request.origin))
        if (first && options.firstNote !== undefined) yield* view.print(`  ${style.dim(options.firstNote)}`)
        first = false
        const content = yield* readForPreview(options.workspace, request)
        const note = options.toolNote === undefined ? undefined : yield* options.toolNote(request.call.name)
        yield* view.print(questionLines(request, content, style, note).join("\n"), request.origin === undefined ? request.call.tool_call_id : undefined)
        const answered = yield* Deferred.make<Decision>()
        const decision = yield* Effect.acquireUseRelease(
          Effect.zipRight(
            Ref.set(pending, Option.some(answered)),
            Effect.zipRight(
              Effect.sync(() => {
                editor.stash()
                editor.setPrompt(`${style.yellow("allow?")} ${style.dim("y/a/n")} › `)
              }),
              view.setAsking(`waiting for your answer: allow this ${request.call.name} call? (y/a/n)`)
            )
          ),
          () => Deferred.await(answered),
          () =>
            Effect.zipRight(
              Ref.set(pending, Option.none()),
              Effect.zipRight(
                view.setAsking(undefined),
                Effect.sync(() => {
                  editor.setPrompt(options.prompt)
                  editor.unstash()
                })
              )
            )
        )
        yield* view.print(answerLine(decision, request, style), request.call.tool_call_id)
        return decision
      })
    const answer = (line: string) =>
      Effect.gen(function*() {
        const open = yield* Ref.get(pending)
        if (Option.isNone(open)) return false
        const decision = parseAnswer(line)
        if (decision === undefined) yield* view.print(`  ${style.dim(ANSWER_HINT)}`)
        else yield* Deferred.succeed(open.value, decision)
        return true
      })
    return { approver, answer }
  })
