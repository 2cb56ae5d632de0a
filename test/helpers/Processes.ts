import { Effect } from "effect"
import * as Fs from "node:fs"

/** Waits for a file the command under test writes (a real condition, polled). */
export const awaitFileText = (path: string): Effect.Effect<string> =>
  Effect.suspend(() => {
    const text = Fs.existsSync(path) ? Fs.readFileSync(path, "utf8").trim() : ""
    return text !== "" ? Effect.succeed(text) : Effect.zipRight(Effect.sleep("10 millis"), awaitFileText(path))
  })
