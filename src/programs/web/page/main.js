// The page of `baton web`. It loads a conversation's snapshot (the history up to the running task),
// then follows the host's log over SSE; transcript.js shows every event the same way, so a reload,
// a reconnect and a second tab build the same transcript. The host decides everything (approvals,
// locks, usage); the page only asks and shows.
import { makeBanner } from "./banner.js"
import { $, api, notice } from "./dom.js"
import { loadPanel } from "./panel.js"
import { listenForKeys } from "./questions.js"
import { markCurrent, refreshList, setupSidebar } from "./sidebar.js"
import { newPane, show, showSubagents } from "./transcript.js"
import { makeUsage } from "./usage.js"

/** What the page shows of one conversation, rebuilt from the snapshot and the events. */
let view = null
const currentId = () => view?.id

const banner = makeBanner(currentId)

const renderComposer = () => {
  const locked = view?.state.lock ?? null
  const running = view?.state.running ?? false
  $("message").disabled = locked !== null
  $("send").disabled = locked !== null
  $("send").textContent = running ? "Steer" : "Send"
  $("stop").hidden = !running
  $("status").textContent = running ? "running" : ""
  banner.showLock(locked)
}

/** Resolved when the host says no task runs (a steering line that came too late waits for it). */
let idle = []
const whenIdle = () => (view.state.running ? new Promise((resolve) => idle.push(resolve)) : Promise.resolve())

const setState = (state) => {
  if (state.notice !== undefined) return notice(state.notice, "error")
  if (state.running && !view.state.running) view.usage.begin()
  if (!state.running && view.state.running) {
    // A finished task: the host's totals count it now, and its conversation moves up the list.
    view.usage.refresh().catch(() => undefined)
    refreshList().catch(() => undefined)
  }
  view.state = state
  renderComposer()
  if (!state.running) {
    for (const resolve of idle) resolve()
    idle = []
  }
}

const followLog = (after) => {
  const source = new EventSource(`/api/conversations/${view.id}/events?after=${after}`)
  source.addEventListener("message", (m) => {
    const e = JSON.parse(m.data)
    show(view, e, true)
    // The list's badge says which conversations wait for an answer.
    if (e.type === "approval_request" || e.type === "approval_decision") refreshList().catch(() => undefined)
  })
  source.addEventListener("state", (m) => setState(JSON.parse(m.data)))
  source.addEventListener("age", (m) => banner.shiftWait(Number(m.data)))
  // What we asked for is gone (another task began while we were away, or the host restarted): load again.
  source.addEventListener("reset", () => open(view.id))
  // The browser reconnects by itself (resuming after the last event); meanwhile say so.
  source.addEventListener("error", () => ($("link").textContent = "connection lost, reconnecting…"))
  source.addEventListener("open", () => ($("link").textContent = ""))
  return source
}

const showTitle = (title) => {
  $("title").textContent = title ?? "Untitled conversation"
  $("name").hidden = title !== undefined
}

const open = async (id) => {
  view?.source.close()
  banner.clearWait()
  const snapshot = await api("GET", `/api/conversations/${encodeURIComponent(id)}`)
  const transcript = $("transcript")
  transcript.replaceChildren()
  view = {
    id,
    source: { close() {} },
    state: snapshot.state,
    pane: newPane(transcript),
    children: new Map(),
    questions: [],
    scroller: transcript,
    banner,
    usage: makeUsage(currentId, snapshot.usage)
  }
  if (location.hash !== `#${id}`) history.replaceState(null, "", `#${id}`)
  showTitle(snapshot.conversation.title)
  for (const item of snapshot.items) show(view, item, false)
  if ([...view.pane.calls.values()].some((card) => card.name === "Task")) {
    const { subagents } = await api("GET", `/api/conversations/${encodeURIComponent(id)}/subagents`)
    if (view.id === id) showSubagents(view, subagents)
  }
  view.pane.text = null
  view.pane.reasoning = null
  renderComposer()
  view.source = followLog(snapshot.after)
  transcript.scrollTop = transcript.scrollHeight
  markCurrent(id)
  await refreshList()
}

const create = async () => {
  const { conversation } = await api("POST", "/api/conversations")
  await open(conversation.id)
  return conversation.id
}

$("new").addEventListener("click", () => create().catch((e) => notice(e.message, "error")))
$("name").addEventListener("click", async () => {
  try {
    const { title } = await api("POST", `/api/conversations/${view.id}/title`)
    showTitle(title)
    await Promise.all([refreshList(), view.usage.refresh()])
  } catch (e) {
    notice(e.message, "error")
  }
})
$("stop").addEventListener("click", () => api("POST", `/api/conversations/${view.id}/interrupt`).catch((e) => notice(e.message, "error")))
$("composer").addEventListener("submit", async (event) => {
  event.preventDefault()
  const text = $("message").value.trim()
  if (text === "") return
  try {
    if (view === null) await create()
    if (view.state.running) {
      const { queued } = await api("POST", `/api/conversations/${view.id}/steer`, { text })
      if (!queued) {
        // The task was ending as the line was sent: once it has, the line is the next prompt.
        $("message").value = ""
        await whenIdle()
        notice("the task ended before your line reached it: sent as the next prompt")
        await api("POST", `/api/conversations/${view.id}/tasks`, { prompt: text })
      }
    } else {
      await api("POST", `/api/conversations/${view.id}/tasks`, { prompt: text })
    }
    $("message").value = ""
  } catch (e) {
    notice(e.message, "error")
  }
})
$("message").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault()
    $("composer").requestSubmit()
  }
})
listenForKeys(() => view)
setupSidebar((id) => open(id).catch((e) => notice(e.message, "error")))

const start = async () => {
  loadPanel().catch((e) => notice(e.message, "error"))
  const conversations = await refreshList()
  const wanted = location.hash.slice(1)
  if (wanted !== "") await open(wanted)
  else if (conversations.length > 0) await open(conversations[0].id)
}
start().catch((e) => notice(e.message, "error"))
