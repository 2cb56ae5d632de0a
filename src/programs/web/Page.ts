import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

/** The page's three files: its HTML, its styles and its script (bundled at build time). */
export interface Page {
  readonly html: string
  readonly css: string
  readonly script: string
}

const BUILT = Path.join("dist", "page")

/**
 * The page as the build left it (scripts/build-page.mjs: dist/page/), read once at start-up from the
 * package, never a CDN: the browser may have no network. Found by walking up from this module, which
 * runs from src/ in a checkout, dist/bin/ as the CLI bundle and dist/lib/ as the library.
 */
export const loadPage: Effect.Effect<Page, string> = Effect.suspend(() => {
  let dir = Path.dirname(fileURLToPath(import.meta.url))
  for (let up = 0; up < 6; up++) {
    const candidate = Path.join(dir, BUILT)
    if (Fs.existsSync(Path.join(candidate, "app.js"))) {
      const read = (file: string) => Fs.readFileSync(Path.join(candidate, file), "utf8")
      return Effect.succeed({ html: read("index.html"), css: read("app.css"), script: read("app.js") })
    }
    dir = Path.dirname(dir)
  }
  return Effect.fail("the page's files (dist/page/: index.html, app.css, app.js) are missing: run `npm run build`")
})
