// DOM and HTTP helpers every module of the page shares. Text always goes in as text nodes: the one
// way HTML reaches the page is markdown.js, through DOMPurify.

export const $ = (id) => document.getElementById(id)

export const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag)
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value)
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? "" : value)
  }
  for (const child of children) if (child !== undefined && child !== null && child !== false) node.append(child)
  return node
}

/** A JSON request to the host; a refusal becomes an Error with the host's message. */
export const api = async (method, path, body) => {
  const response = await fetch(path, {
    method,
    headers: body !== undefined ? { "content-type": "application/json" } : {},
    body: body !== undefined ? JSON.stringify(body) : undefined
  })
  const json = await response.json().catch(() => ({}))
  if (!response.ok) throw new Error(json.message ?? `${response.status} ${response.statusText}`)
  return json
}

/** Keeps the transcript pinned to its end while the reader is there; one who scrolled up stays put. */
export const follow = (scroller, change) => {
  const atEnd = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 48
  change()
  if (atEnd) scroller.scrollTop = scroller.scrollHeight
}

export const notice = (text, cls = "note") => {
  const transcript = $("transcript")
  follow(transcript, () => transcript.append(el("div", { class: `notice ${cls}`, role: cls === "error" ? "alert" : undefined }, text)))
}

export const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`

export const count = (n) => (n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : n.toLocaleString("en-US"))

export const seconds = (ms) => (ms < 1000 ? `${Math.round(ms)} ms` : ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.floor(ms / 60_000)} m ${Math.round((ms % 60_000) / 1000)} s`)
