import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const PAGE = Path.join("src", "programs", "web", "page")

/**
 * The page's two files, read once at start-up from the package (never a CDN: the browser may have
 * no network). They sit next to this module in a checkout and under the package root in the bundle.
 */
export const loadPage: Effect.Effect<{ readonly html: string; readonly script: string }, string> = Effect.suspend(() => {
  let dir = Path.dirname(fileURLToPath(import.meta.url))
  for (let up = 0; up < 6; up++) {
    for (const candidate of [Path.join(dir, "page"), Path.join(dir, PAGE)]) {
      const html = Path.join(candidate, "index.html")
      if (Fs.existsSync(html)) {
        return Effect.succeed({ html: Fs.readFileSync(html, "utf8"), script: Fs.readFileSync(Path.join(candidate, "app.js"), "utf8") })
      }
    }
    dir = Path.dirname(dir)
  }
  return Effect.fail("the page's files (src/programs/web/page/index.html, app.js) are missing from this installation")
})
