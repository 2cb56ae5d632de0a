import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { cli } from "./Cli.js"
import { endingOf } from "./programs/cli/Ending.js"
import { withPlatform } from "./programs/cli/Platform.js"
import { colorFor, stripAnsi } from "./programs/cli/view/Style.js"

/**
 * @effect/cli prints its parse errors with Console.error, in its own words; Cli.ts turns each into one
 * line (UsageError), so those prints are dropped (no command writes through Console.error). What it
 * prints with Console.log (`--version`, completions) is plain on a pipe or with NO_COLOR.
 */
const cliConsole = (color: boolean) =>
  Effect.map(Effect.console, (console): Console.Console => ({
    ...console,
    log: (...args) => console.log(...args.map((a) => (typeof a === "string" && !color ? stripAnsi(a) : a))),
    error: () => Effect.void
  }))

const program = cli(process.argv).pipe(
  (self) => Effect.flatMap(cliConsole(colorFor(process.stdout, process.env)), (c) => Effect.withConsole(self, c)),
  withPlatform,
  Effect.as(0),
  Effect.catchAllCause((cause) =>
    Cause.isInterruptedOnly(cause)
      ? Effect.failCause(cause)
      : Effect.sync(() => {
        const ending = endingOf(cause)
        if (ending.message !== undefined) process.stderr.write(`baton: ${ending.message}\n`)
        return ending.code
      })
  )
)

NodeRuntime.runMain(program, {
  disableErrorReporting: true,
  disablePrettyLogger: true,
  teardown: (exit, onExit) =>
    onExit(Exit.isSuccess(exit) && typeof exit.value === "number" ? exit.value : Exit.isInterrupted(exit) ? 130 : 1)
})
