import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { type BackendError, ConfigError } from "../../domain/Errors.js"
import type { TaskEvent } from "../../domain/Events.js"
import { emptyRules } from "../../domain/Settings.js"
import type { Backend } from "../../services/Backend.js"
import type { ToolExecutor } from "../../services/ToolExecutor.js"
import type { Approver } from "../session/ApprovalGate.js"
import { open } from "../session/Session.js"
import { CommandExit, ExitCode, exitCodeFor, type Outcome, stepOutcome } from "./ExitCode.js"
import type { Io } from "./Io.js"
import { previewLines, readForPreview } from "./view/ApprovalView.js"
import { makeLiveView } from "./view/LiveView.js"
import { makeScreen } from "./view/Screen.js"
import { colorFor, makeStyle } from "./view/Style.js"

/**
 * `baton demo`: a small coding task through the whole stack with no model and no network. The
 * "model" is a cassette (demo/cassette.jsonl) that scripts/record-demo.ts recorded from a scripted
 * provider; the rest is real: the SQLite store in a fresh home, the tools in a fresh copy of
 * demo/workspace, the shell commands. Every call is shown, with its diff, and approved automatically.
 */

export const DEMO_PROMPT = "The tests in this project fail. Find out why and fix src/slug.js."

/** demo/ next to this module's package (src/programs/cli/ when run from source, dist/bin/chunks/ when bundled). */
export const demoAssets = (): Effect.Effect<string, ConfigError> =>
  Effect.suspend(() => {
    let dir = Path.dirname(fileURLToPath(import.meta.url))
    for (let up = 0; up < 5; up++) {
      if (Fs.existsSync(Path.join(dir, "demo", "cassette.jsonl"))) return Effect.succeed(Path.join(dir, "demo"))
      dir = Path.dirname(dir)
    }
    return Effect.fail(new ConfigError({ source: "demo", message: "the demo's files (demo/cassette.jsonl, demo/workspace) are missing from this installation" }))
  })

/** Where the demo runs: a fresh home and workspace under `root`. */
export interface DemoDirs {
  readonly root: string
  readonly home: string
  readonly workspace: string
}

/** A fresh home and a fresh copy of the template workspace under the OS temp directory. */
export const prepareDemo = (assets: string): Effect.Effect<DemoDirs> =>
  Effect.sync(() => {
    const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-demo-"))
    const home = Path.join(root, "home")
    const workspace = Path.join(root, "workspace")
    Fs.mkdirSync(home)
    Fs.cpSync(Path.join(assets, "workspace"), workspace, { recursive: true })
    return { root, home, workspace: Fs.realpathSync(workspace) }
  })

/** How to run this same bin again, for the closing hint. */
const invocation = (io: Io): string => {
  const script = io.argv[1]
  if (script === undefined) return "baton"
  // Installed (npm install -g): the bin's directory is on PATH, and `baton` is what the user types.
  if ((io.env["PATH"] ?? "").split(Path.delimiter).some((dir) => dir !== "" && Path.resolve(dir) === Path.dirname(script))) return "baton"
  const relative = Path.relative(io.cwd(), script)
  return relative.startsWith("..") || Path.isAbsolute(relative) ? "baton" : `node ${relative}`
}

/** The demo in `dirs` (see prepareDemo), with the backend and the tools of that home and workspace. */
export const demo: (io: Io, dirs: DemoDirs) => Effect.Effect<
  void,
  BackendError | ConfigError | CommandExit,
  Backend | ToolExecutor
> = Effect.fn("Cli.demo")(function*(io: Io, dirs: DemoDirs) {
  const style = makeStyle(colorFor({ isTTY: io.stdoutTTY }, io.env))
  const screen = makeScreen({ write: io.out, columns: io.columns }, io.stdoutTTY)
  const view = makeLiveView(screen, { style, userDecisions: false, reasoning: true, prompts: true }, "recorded model, real tools")
  yield* view.print([
    `${style.bold("baton demo")} — a recorded model fixes a bug in a tiny project. No API key, no network:`,
    style.dim("the model's side is a cassette (demo/cassette.jsonl); the store, the tools and the shell commands are real."),
    style.dim(`workspace ${dirs.workspace}  (a fresh copy of demo/workspace)`),
    style.dim(`home      ${dirs.home}  (conversations in baton.db)`)
  ].join("\n") + "\n\n")
  let explained = false
  const approver: Approver = (request) =>
    Effect.gen(function*() {
      yield* view.awaitShown(request.call.tool_call_id)
      const content = yield* readForPreview(dirs.workspace, request)
      const label = view.callLabel(request.call.tool_call_id)
      const why = explained ? "" : ` ${style.dim("(the demo approves every call; `baton chat` would ask you)")}`
      explained = true
      yield* view.print([...previewLines(request, content, style), `  ${style.green(`✓ ${label}approved`)}${why}`].join("\n"), request.call.tool_call_id)
      return "allow" as const
    })
  const { conversationId, outcome } = yield* Effect.scoped(Effect.gen(function*() {
    // The bundled recording was made without subagents: its requests offer no Task.
    const session = yield* open({ approver, rules: emptyRules, subagents: false })
    let outcome: Outcome = undefined
    yield* Effect.scoped(Effect.gen(function*() {
      yield* view.during
      yield* session.run(DEMO_PROMPT).pipe(
        Stream.runForEach((event: TaskEvent) => Effect.zipRight(Effect.sync(() => (outcome = stepOutcome(outcome, event))), view.show(event)))
      )
    }))
    return { conversationId: session.conversationId, outcome }
  }))
  const again = invocation(io)
  yield* view.print([
    "",
    outcome === "end_turn" ? style.green("✓ the task is done") : style.red(`✗ the task ended with ${outcome ?? "no stop reason"}`),
    `conversation ${style.bold(conversationId)}`,
    `  history:  ${again} sessions show ${conversationId} --home ${dirs.home}`,
    `  events:   ${again} sessions show ${conversationId} --home ${dirs.home} --json`,
    `  trace:    ${again} sessions export ${conversationId} --home ${dirs.home} --out ${Path.join(dirs.root, "trace")}`,
    `  the code: node ${Path.join(dirs.workspace, "test.js")}`,
    "",
    style.dim("With a real model: export BATON_PROVIDER=openai-chat BATON_MODEL=… BATON_API_KEY=…, then baton chat (see README.md)."),
    style.dim(`(${dirs.root} is yours to delete)`)
  ].join("\n"))
  screen.close()
  const code = exitCodeFor(outcome)
  if (code !== ExitCode.ok) return yield* new CommandExit({ code })
})
