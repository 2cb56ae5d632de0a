import { quickAnswer, rootHelp } from "./Help.js"
import { VERSION } from "./Version.js"

// The bundle's entry: the overview page and the version need nothing but this file; any other
// invocation loads the CLI (main.ts) on demand. See bench/startup.ts.
const answer = quickAnswer(process.argv.slice(2))
if (answer === "help") {
  process.stdout.write(rootHelp(process.stdout.isTTY === true && (process.env["NO_COLOR"] ?? "") === ""))
} else if (answer === "version") {
  process.stdout.write(`${VERSION}\n`)
} else {
  await import("./main.js")
}
