// The model's Markdown as HTML: marked parses, DOMPurify removes everything that could run or load
// (script, event handlers, javascript: links, forms, styles), highlight.js colours fenced code, and
// each code block gets a Copy button. Nothing the model writes reaches the DOM unsanitized.
import DOMPurify from "dompurify"
import hljs from "highlight.js/lib/core"
import bash from "highlight.js/lib/languages/bash"
import css from "highlight.js/lib/languages/css"
import diff from "highlight.js/lib/languages/diff"
import go from "highlight.js/lib/languages/go"
import java from "highlight.js/lib/languages/java"
import javascript from "highlight.js/lib/languages/javascript"
import json from "highlight.js/lib/languages/json"
import markdown from "highlight.js/lib/languages/markdown"
import python from "highlight.js/lib/languages/python"
import rust from "highlight.js/lib/languages/rust"
import shell from "highlight.js/lib/languages/shell"
import sql from "highlight.js/lib/languages/sql"
import typescript from "highlight.js/lib/languages/typescript"
import xml from "highlight.js/lib/languages/xml"
import yaml from "highlight.js/lib/languages/yaml"
import { Marked } from "marked"
import { el } from "./dom.js"

for (const [name, language] of Object.entries({ bash, css, diff, go, java, javascript, json, markdown, python, rust, shell, sql, typescript, xml, yaml })) {
  hljs.registerLanguage(name, language)
}

const marked = new Marked({ gfm: true, breaks: false, async: false })

const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed"],
  FORBID_ATTR: ["style", "class", "id"]
}

/** A code block's Copy button: the block's text, exactly as shown. */
export const copyButton = (source) => {
  const button = el("button", { type: "button", class: "copy", "aria-label": "Copy code" }, "Copy")
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(source.textContent)
      button.textContent = "Copied"
    } catch {
      getSelection()?.selectAllChildren(source)
      button.textContent = "Selected"
    }
    setTimeout(() => (button.textContent = "Copy"), 1500)
  })
  return button
}

/** Colours one code element in place (highlight.js escapes what it writes) and gives it a Copy button. */
export const highlight = (code, language) => {
  if (language !== undefined && hljs.getLanguage(language) !== undefined) {
    code.innerHTML = hljs.highlight(code.textContent, { language, ignoreIllegals: true }).value
  } else {
    const guess = hljs.highlightAuto(code.textContent)
    if (guess.relevance >= 5) code.innerHTML = guess.value
  }
  code.classList.add("hljs")
}

/** Renders `text` (Markdown) into `target`, replacing what it held. */
export const renderMarkdown = (target, text) => {
  const html = marked.parse(text)
  // The fence's language, read before DOMPurify drops class attributes.
  const languages = [...html.matchAll(/<pre><code(?: class="language-([\w+-]+)")?>/g)].map((m) => m[1])
  const fragment = DOMPurify.sanitize(html, PURIFY)
  fragment.querySelectorAll("a[href]").forEach((a) => {
    a.setAttribute("target", "_blank")
    a.setAttribute("rel", "noopener noreferrer")
  })
  fragment.querySelectorAll("pre > code").forEach((code, i) => {
    highlight(code, languages[i])
    const pre = code.parentElement
    const block = el("div", { class: "code-block" })
    pre.replaceWith(block)
    block.append(copyButton(code), pre)
  })
  target.replaceChildren(fragment)
}
