// dist/page/  the page of `baton web`: index.html, app.css and app.js, the page's modules
//             (src/programs/web/page/) bundled with marked, DOMPurify and highlight.js for the
//             browser. Baton serves these three files itself: the page loads nothing else (no CDN,
//             no network), and its script needs no eval, so the page's CSP stays strict.
import { build } from "esbuild"
import { copyFileSync, mkdirSync, rmSync } from "node:fs"
import { join } from "node:path"

const PAGE = "src/programs/web/page"

export const buildPage = async (root) => {
  const out = join(root, "dist", "page")
  rmSync(out, { recursive: true, force: true })
  mkdirSync(out, { recursive: true })
  for (const file of ["index.html", "app.css"]) copyFileSync(join(root, PAGE, file), join(out, file))
  await build({
    absWorkingDir: root,
    entryPoints: { app: `${PAGE}/main.js` },
    outdir: "dist/page",
    bundle: true,
    platform: "browser",
    format: "esm",
    target: "es2022",
    minify: true,
    legalComments: "none",
    logLevel: "warning"
  })
}
