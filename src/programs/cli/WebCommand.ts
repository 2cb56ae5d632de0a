import * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import type { Io } from "./Io.js"
import { BatonWeb } from "../web/WebServer.js"

export interface WebCommandOptions {
  readonly host: string | undefined
  readonly port: number | undefined
  readonly token: Redacted.Redacted<string> | undefined
}

/** What the start-up lines say besides the address. */
export interface WebBanner {
  readonly model: string
  readonly workspace: string
  readonly token: boolean
}

/**
 * `baton web`: a page for this workspace's sessions, hosted here (the tools run in this process).
 * Prints the URL to open and runs until SIGINT / SIGTERM; running tasks are interrupted then (their
 * carry-over recorded, as Ctrl-C in `baton chat` does).
 */
export const web: (io: Io, banner: WebBanner) => Effect.Effect<never, never, BatonWeb> = Effect.fn("Cli.web")(
  function*(io: Io, banner: WebBanner) {
    const bound = yield* BatonWeb
    io.err(`baton web: ${bound.url}\n`)
    io.err(`  ${banner.model} · tools in ${banner.workspace}\n`)
    io.err(banner.token
      ? "  token required: the URL above sets a cookie once (keep it private)\n"
      : "  loopback only, no token. Approve each tool call on the page. Ctrl-C stops it.\n")
    return yield* Effect.never
  }
)
