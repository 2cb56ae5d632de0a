import { Effect } from "effect"
import * as Fs from "node:fs"
import { startListening } from "./cliProcess.js"

/** Debian's Chromium, the one browser these tests drive (never a downloaded one). */
export const CHROMIUM = "/usr/bin/chromium"
export const haveChromium = Fs.existsSync(CHROMIUM)

/** The flags of a sandboxed, offline headless run (without them Chromium floods a closed network). */
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic"
]

/** `baton web` as a child process; `url` as printed (with `?token=` when there is one), `stop` waits for the exit. */
export const startWeb = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.map(startListening("web", args, env), (web) => ({
    ...web,
    origin: new URL(web.url).origin,
    stop: Effect.zipRight(web.stop, web.exited)
  }))
