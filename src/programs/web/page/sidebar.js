// The conversation list: titles (the model's, else the first prompt's opening words), how long
// ago, whether a task runs or waits for an answer, forks with their source, and a search box. The
// host lists root conversations only: a subagent is shown under its parent's Task call.
import { $, api, el } from "./dom.js"

let all = []
let current = null
let onOpen = (_id) => {}

export const ago = (ms, now = Date.now()) => {
  const s = Math.max(0, Math.round((now - ms) / 1000))
  if (s < 45) return "just now"
  if (s < 3600) return `${Math.max(1, Math.round(s / 60))} min ago`
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`
  if (s < 2 * 86_400) return "yesterday"
  if (s < 7 * 86_400) return `${Math.round(s / 86_400)} days ago`
  return new Date(ms).toLocaleDateString([], { month: "short", day: "numeric" })
}

const titleOf = (c) => c.title ?? c.opening ?? "Empty conversation"

const item = (c) => {
  const source = c.forked_from !== undefined ? all.find((o) => o.id === c.forked_from) : undefined
  return el("li", {},
    el("button", { type: "button", class: "conversation", title: c.id, "aria-current": current === c.id ? "true" : "false", onclick: () => onOpen(c.id) },
      el("span", { class: `label${c.title === undefined ? " untitled" : ""}` }, titleOf(c)),
      el("span", { class: "meta" },
        el("time", { datetime: new Date(c.updated_at).toISOString() }, ago(c.updated_at)),
        c.forked_from !== undefined ? el("span", { class: "fork" }, `fork of ${source !== undefined ? titleOf(source) : c.forked_from.slice(0, 8)}`) : undefined,
        c.waiting > 0 ? el("span", { class: "badge waiting" }, "waiting") : c.running ? el("span", { class: "badge running" }, "running") : undefined)))
}

const render = () => {
  const query = $("search").value.trim().toLowerCase()
  const shown = query === "" ? all : all.filter((c) => titleOf(c).toLowerCase().includes(query))
  $("conversations").replaceChildren(...shown.map(item))
  $("empty-list").hidden = shown.length > 0
  $("empty-list").textContent = all.length === 0 ? "No conversations yet." : "No conversation matches."
}

/** Loads the list again (a task ended, a title was made, time passed). */
export const refreshList = async () => {
  const { conversations } = await api("GET", "/api/conversations")
  all = conversations
  render()
  return all
}

export const markCurrent = (id) => {
  current = id
  render()
}

export const setupSidebar = (open) => {
  onOpen = (id) => {
    document.body.classList.remove("drawer-open")
    open(id)
  }
  $("search").addEventListener("input", render)
  $("menu").addEventListener("click", () => document.body.classList.toggle("drawer-open"))
  $("scrim").addEventListener("click", () => document.body.classList.remove("drawer-open"))
  // Relative times and badges of conversations other tabs run.
  setInterval(() => refreshList().catch(() => undefined), 15_000)
}
