import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"

/**
 * Waits for a file the command under test writes, woken by the file system (inotify), not by a
 * timer: the directory is watched before the first look, so a write in between is never missed.
 */
export const awaitFileText = (path: string): Effect.Effect<string> =>
  Effect.async<string>((resume) => {
    let done = false
    const watcher = Fs.watch(Path.dirname(path), () => check())
    const check = () => {
      if (done) return
      let text = ""
      try {
        text = Fs.readFileSync(path, "utf8").trim()
      } catch {
        return
      }
      if (text === "") return
      done = true
      watcher.close()
      resume(Effect.succeed(text))
    }
    check()
    return Effect.sync(() => watcher.close())
  })

/** Whether a process has exited (gone, or a zombie waiting to be reaped). */
export const procGone = (pid: number) => {
  try {
    const state = Fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0]
    return state === "Z" || state === "X"
  } catch {
    return true
  }
}
