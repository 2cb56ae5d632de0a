import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { BackendError, ConfigError } from "../../domain/Errors.js"
import type { StopReasonValue, TaskEvent } from "../../domain/Events.js"
import { Backend } from "../../services/Backend.js"
import type { Credentials } from "../../services/provider/Credentials.js"
import { authLock } from "./AuthLock.js"
import { mentionedImages, readImage } from "./Images.js"
import { McpClients } from "../../services/McpClients.js"
import { ToolExecutor } from "../../services/ToolExecutor.js"
import { describeSandbox, sandboxOff } from "../../domain/Sandbox.js"
import { sandboxedRules, SANDBOX_NOTE } from "./Sandboxing.js"
import type { Approver } from "../session/ApprovalGate.js"
import { type AppEnv, conversationSettings, maxTurns } from "./Env.js"
import { instructionsNote } from "./ProjectInstructions.js"
import { allowAll, NOT_A_TTY_NOTE } from "./approvers/Terminal.js"
import { makeChatApproval } from "./approvers/Chat.js"
import { selectConversation } from "./SelectConversation.js"
import type { Io } from "./Io.js"
import { offeredCount, reportMcp, toolNote } from "./McpReport.js"
import { type InputEvent, startLineEditor } from "./view/LineEditor.js"
import { makeLiveView } from "./view/LiveView.js"
import { makeScreen } from "./view/Screen.js"
import { open, type SessionError } from "../session/Session.js"
import { renderHistory } from "./SessionsCommand.js"
import { colorFor, makeStyle } from "./view/Style.js"
import { VERSION } from "../../services/Version.js"

const HELP = [
  "/compact   summarize the conversation so far into a fresh context",
  "/title     give the conversation a title (one model call)",
  "/fork [N]  continue in a fork of this conversation (its context up to position N, default: all of it)",
  "/key       (when locked after the model refused the key) type a key for this process, not shown",
  "/help      this list",
  "/exit      leave (Ctrl-D or Ctrl-C twice at the prompt also leave)",
  "While a task runs: type and press Enter to steer it; Ctrl-C (or Esc) interrupts it."
]

/**
 * `baton chat`: one conversation, prompt after prompt. Input is read all the time, so a line typed
 * while a task runs steers it, an approval question takes the next typed answer, and Ctrl-C
 * interrupts the task (the Session records the carry-over) without leaving. On piped input each line
 * is a prompt, nothing is approved by a prompt, and the end of input ends the chat. `model` names
 * the model for the header line.
 */
export const chat: (io: Io, env: AppEnv, model: string, credentials?: Credentials) => Effect.Effect<
  void,
  BackendError | ConfigError,
  Backend | ToolExecutor | McpClients | Scope.Scope
> = Effect.fn("Cli.chat")(function*(io: Io, env: AppEnv, model: string, credentials?: Credentials) {
  const interactive = io.stdinTTY && io.stdoutTTY
  const style = makeStyle(colorFor({ isTTY: io.stdoutTTY }, io.env))
  const screen = makeScreen({ write: io.out, columns: io.columns }, interactive)
  const mode = env.args.approve ?? "ask"
  // The chat's own question shows each answer; `--approve allow` answers without one, so say so.
  const view = makeLiveView(
    screen,
    { style, userDecisions: mode === "allow", userLabel: "(--approve allow)", reasoning: true, prompts: false, steering: false },
    "Ctrl-C interrupts"
  )
  const input = yield* Queue.unbounded<InputEvent>()
  const editor = yield* Effect.acquireRelease(
    Effect.sync(() => startLineEditor(io.stdin, screen, (event) => Queue.unsafeOffer(input, event))),
    (e) => Effect.sync(() => {
      e.stop()
      screen.close()
    })
  )
  const prompt = style.bold(style.cyan("› "))
  const steerPrompt = style.dim("steer › ")
  const mcp = yield* McpClients
  const sandbox = (yield* ToolExecutor).sandbox ?? sandboxOff
  // In ask mode a command that runs inside the sandbox needs no question; the first question says so.
  const rules = mode === "ask" ? sandboxedRules(env.settings.rules, sandbox) : env.settings.rules
  const approval = yield* makeChatApproval({
    view,
    editor,
    style,
    workspace: env.workspace,
    prompt: steerPrompt,
    ...(rules !== env.settings.rules ? { firstNote: SANDBOX_NOTE } : {}),
    toolNote: (name) => Effect.map(mcp.servers, (servers) => toolNote(servers, name))
  })
  const approver: Approver | undefined = mode === "allow" ? allowAll : mode === "ask" && interactive ? approval.approver : undefined

  const selected = yield* selectConversation(env)
  const backend = yield* Backend
  const openSession = (conversationId: typeof selected.id) =>
    open({
      ...(conversationId !== undefined ? { conversationId } : {}),
      rules,
      ...(env.settings.file.agents !== undefined ? { agents: env.settings.file.agents } : {}),
      ...(approver !== undefined ? { approver } : {}),
      settings: conversationSettings(env)
    })
  // `/fork` swaps it for a session on the fork; the old one stays open (idle) until the chat ends.
  let session = yield* openSession(selected.id)
  const servers = yield* mcp.servers
  const mcpTools = servers.length > 0 ? ` · ${offeredCount(servers)} MCP tool${offeredCount(servers) === 1 ? "" : "s"}` : ""
  yield* view.print([
    `${style.bold("baton")} ${VERSION} · ${model} · ${env.workspace}${mcpTools}`,
    style.dim(`${selected.id !== undefined ? "continuing" : "new"} conversation ${session.conversationId}`),
    // No sandbox where one was asked for (or would be the default) is said in yellow, once.
    sandbox.unavailable !== undefined ? style.yellow(describeSandbox(sandbox)) : style.dim(describeSandbox(sandbox)),
    // A continued conversation keeps the instructions it was created with.
    ...(selected.id === undefined ? [instructionsNote(env.instructions, env.workspace)].flatMap((n) => (n === undefined ? [] : [style.dim(n)])) : []),
    ...(mode === "ask" && !interactive ? [style.yellow(NOT_A_TTY_NOTE)] : []),
    ...(interactive ? [style.dim("Enter sends · typing during a task steers it · Ctrl-C interrupts a task · /help · /exit")] : [])
  ].join("\n"))
  yield* reportMcp(mcp, (text) => view.print(style.yellow(text)))
  if (selected.id !== undefined) {
    const items = yield* session.backfill
    if (items.length > 0) {
      renderHistory(items, style, (text) => screen.write(text))
      yield* view.print(style.dim("────"))
    }
  }
  const turns = maxTurns(env)
  // Lines typed as a task ended, too late to steer it: the next prompt, before anything typed after them.
  const nextPrompt: Array<string> = []

  /** One task; input keeps flowing to steering, the approval question and Ctrl-C meanwhile. */
  const task = (events: Stream.Stream<TaskEvent, SessionError>) =>
    Effect.scoped(Effect.gen(function*() {
      yield* view.during
      editor.setPrompt(steerPrompt)
      let interrupts = 0
      let stop: StopReasonValue | undefined
      const renderer = yield* events.pipe(
        Stream.runForEach((event) => {
          if (event.type === "stop_reason") stop = event.reason
          return view.show(event)
        }),
        Effect.catchAll((error) => view.print(style.red(`✗ ${error.message}`))),
        Effect.forkScoped
      )
      // Piped input is a list of prompts, one per task: it is read only between tasks.
      if (interactive) yield* Effect.forkScoped(Effect.forever(Effect.gen(function*() {
        const event = yield* Queue.take(input)
        switch (event._tag) {
          case "Line": {
            if (yield* approval.answer(event.text)) return
            const text = event.text.trim()
            // Enter alone during a wait (a reconnect, a busy conversation) retries now; the count is unchanged.
            if (text === "") return yield* Effect.ignore(session.skipReconnectWait)
            if (text.startsWith("/")) return yield* view.print(style.dim("commands wait until the task ends (Ctrl-C interrupts it)"))
            if (yield* session.steer(text)) {
              return yield* view.print(style.magenta(`↳ steering: ${text} ${style.dim("(sent with the next model request)")}`))
            }
            nextPrompt.push(text)
            return yield* view.print(style.magenta(`↳ queued as the next prompt: ${text} ${style.dim("(too late to steer: nothing was running that could take it)")}`))
          }
          case "Interrupt":
          case "Escape": {
            // An interrupt that never finishes must not trap the user: the third Ctrl-C quits.
            if (event._tag === "Interrupt" && ++interrupts >= 3) {
              editor.stop()
              screen.close()
              io.err("baton: forced to quit while the task was stopping\n")
              io.exit(130)
            }
            if (interrupts === 2) yield* view.print(style.dim("(stopping… Ctrl-C once more forces Baton to quit)"))
            // Not awaited here: while the server restarts, stopping waits for it, and the keys must still be read.
            return yield* Effect.asVoid(Effect.forkScoped(session.interrupt))
          }
          case "Eof":
            return
        }
      })))
      yield* Fiber.join(renderer)
      return stop
    }))

  /**
   * A prompt's task; after an `auth` stop the prompt is locked until the credentials are fixed, then
   * the conversation re-runs as it stands (the prompt is not sent twice). "exit" when the user left from the lock.
   */
  const prompted = (text: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      // `@path/to/file.png` attaches that image (relative to the workspace).
      const attached = yield* Effect.forEach(mentionedImages(text.join("\n"), env.workspace), (file) =>
        readImage(file, env.workspace).pipe(
          Effect.tap(() => view.print(style.dim(`📎 ${file}`))),
          Effect.catchAll((error) => Effect.as(view.print(style.yellow(`not attached: ${error.message}`)), undefined))
        ))
      const images = attached.filter((image) => image !== undefined)
      const options = turns !== undefined ? { maxTurns: turns } : {}
      // The prompt is sent once: a retry re-runs the conversation, which holds it already.
      let next = session.run(text, { ...options, ...(images.length > 0 ? { images } : {}) })
      for (;;) {
        const stop = yield* task(next)
        screen.write("\n")
        if (stop !== "auth" || !interactive) return undefined
        const outcome = yield* authLock({ model, credentials, input, editor, view, style, prompt })
        if (outcome === "exit") return "exit" as const
        next = session.retry(options)
      }
    })

  const slash = (line: string) =>
    Effect.gen(function*() {
      const [command] = line.slice(1).split(/\s+/)
      switch (command) {
        case "exit":
        case "quit":
          return "exit" as const
        case "help":
          yield* view.print(HELP.map((l) => style.dim(l)).join("\n"))
          return undefined
        case "title": {
          const title = yield* Effect.either(session.generateTitle)
          yield* view.print(title._tag === "Right" ? `title: ${style.bold(title.right)}` : style.red(`✗ no title: ${title.left.message}`))
          return undefined
        }
        case "fork": {
          const at = line.slice(1).split(/\s+/)[1]
          if (at !== undefined && !/^\d+$/.test(at)) {
            yield* view.print(style.red(`✗ /fork takes a position (a whole number), not "${at}"`))
            return undefined
          }
          const fork = yield* Effect.either(backend.fork(session.conversationId, at !== undefined ? { at: Number(at) } : {}))
          if (fork._tag === "Left") {
            yield* view.print(style.red(`✗ ${fork.left.message}`))
            return undefined
          }
          const from = session.conversationId
          session = yield* openSession(fork.right.id)
          yield* view.print(style.dim(`forked ${from} at position ${fork.right.forked_from?.at ?? "?"}: continuing in ${fork.right.id}`))
          return undefined
        }
        case "compact": {
          const can = yield* Effect.either(session.compactability)
          if (can._tag === "Left") yield* view.print(style.red(`✗ ${can.left.message}`))
          else if (can.right !== "ok") {
            yield* view.print(style.dim(
              can.right === "empty"
                ? "nothing to compact yet"
                : can.right === "just_compacted"
                ? "just compacted; nothing new since"
                : can.right === "busy"
                ? "a run or a compaction is active on this conversation; try again when it ends"
                : "this conversation cannot be compacted"
            ))
          } else yield* task(session.compact)
          return undefined
        }
        default:
          yield* view.print(style.dim(`unknown command /${command ?? ""}; /help lists them`))
          return undefined
      }
    })

  // Calls a killed process left waiting are asked again now, before any new prompt (Letta: "the
  // approval prompt pops up again"); answering them finishes the task they belonged to.
  if (selected.id !== undefined && (yield* session.pendingApprovals).length > 0) {
    yield* view.print(style.dim("resuming the calls left waiting for approval"))
    yield* task(session.run([], turns !== undefined ? { maxTurns: turns } : {}))
    screen.write("\n")
  }
  let leaving = false

  let armedExit = false
  while (!leaving) {
    if (nextPrompt.length > 0) {
      const lines = nextPrompt.splice(0)
      yield* view.print(`${prompt}${lines.join("\n")}`)
      leaving = (yield* prompted(lines)) === "exit"
      continue
    }
    editor.setPrompt(prompt)
    const event = yield* Queue.take(input)
    if (event._tag === "Eof") break
    if (event._tag === "Escape") continue
    if (event._tag === "Interrupt") {
      if (event.hadText) {
        armedExit = false
        continue
      }
      if (armedExit) break
      armedExit = true
      yield* view.print(style.dim("(press Ctrl-C again to leave, or type /exit)"))
      continue
    }
    armedExit = false
    const text = event.text.trim()
    if (text === "") continue
    yield* view.print(`${prompt}${text}`)
    if (text.startsWith("/")) {
      if ((yield* slash(text)) === "exit") break
      continue
    }
    leaving = (yield* prompted([text])) === "exit"
  }
  yield* view.print(style.dim(`conversation ${session.conversationId}\ncontinue it with: baton chat --conversation ${session.conversationId}`))
})
