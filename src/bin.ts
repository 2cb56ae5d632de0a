import { quickAnswer, rootHelp } from "./programs/cli/Help.js"
import { capYoungGeneration, youngGenerationLimitMb } from "./programs/cli/YoungGeneration.js"
import { VERSION } from "./services/Version.js"

// The bundle's entry: the overview page and the version need nothing but this file; any other
// invocation loads the CLI (main.ts) on demand. See bench/startup.ts.

// `baton sessions show … | head` closes the pipe early: that is the reader's choice, not a crash.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0)
  throw error
})

const answer = quickAnswer(process.argv.slice(2))
if (answer === "help") {
  process.stdout.write(rootHelp(process.stdout.isTTY === true && (process.env["NO_COLOR"] ?? "") === ""))
} else if (answer === "version") {
  process.stdout.write(`${VERSION}\n`)
} else {
  capYoungGeneration(youngGenerationLimitMb(process.argv.slice(2)), process.versions.v8)
  await import("./main.js")
}
