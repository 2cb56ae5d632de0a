import { Effect } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { ToolError } from "../../domain/Errors.js"

const errnoText: Readonly<Record<string, string>> = {
  ENOENT: "does not exist",
  EISDIR: "is a directory",
  ENOTDIR: "is not a directory (a parent in the path is a file)",
  EACCES: "is not accessible (permission denied)",
  EPERM: "is not accessible (operation not permitted)",
  ENAMETOOLONG: "has a name that is too long",
  ELOOP: "has too many levels of symbolic links"
}

export const errnoOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined

/** Runs a file-system promise; a failure becomes a ToolError naming the path and what went wrong. */
export const fsTry = <A>(tool: string, display: string, run: () => Promise<A>): Effect.Effect<A, ToolError> =>
  Effect.tryPromise({
    try: run,
    catch: (cause) => {
      const code = errnoOf(cause)
      const text = code !== undefined ? errnoText[code] : undefined
      return new ToolError({
        tool,
        message: text !== undefined ? `${display} ${text}` : `${display}: ${cause instanceof Error ? cause.message : String(cause)}`
      })
    }
  })

/** Stat that answers undefined for a missing path instead of failing. */
export const statIfExists = (tool: string, path: string, display: string) =>
  fsTry(tool, display, () =>
    Fs.stat(path).catch((cause: unknown) => {
      if (errnoOf(cause) === "ENOENT") return undefined
      throw cause
    })
  )

/**
 * Replaces a file's content atomically: the bytes go to a temp file in the same directory, which
 * is then renamed over the target, so a reader never sees half a file. The step is uninterruptible
 * because an interrupted in-flight write could otherwise recreate the temp file after its cleanup;
 * an interrupt waits for the (short) write and then takes effect.
 */
export const writeAtomic = (tool: string, path: string, display: string, content: string) =>
  Effect.uninterruptible(
    fsTry(tool, display, async () => {
      const dir = Path.dirname(path)
      await Fs.mkdir(dir, { recursive: true })
      const previous = await Fs.stat(path).catch(() => undefined)
      const temp = Path.join(dir, `.${Path.basename(path)}.baton-${Crypto.randomBytes(6).toString("hex")}.tmp`)
      try {
        await Fs.writeFile(temp, content, { mode: previous?.mode ?? 0o666, flag: "wx" })
        if (previous !== undefined) await Fs.chmod(temp, previous.mode)
        await Fs.rename(temp, path)
      } catch (cause) {
        await Fs.rm(temp, { force: true })
        throw cause
      }
    })
  )
