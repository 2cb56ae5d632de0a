// The page of `baton web`: plain DOM, no dependencies, no network beyond its own host. It loads a
// conversation's snapshot (the history up to the running task), then follows the host's log over
// SSE; every event goes through one `show`, so a reload, a reconnect and a second tab all build the
// same transcript. The host decides everything (approvals, locks); the page only asks.

const $ = (id) => document.getElementById(id)

const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag)
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value)
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? "" : value)
  }
  for (const child of children) if (child !== undefined && child !== null) node.append(child)
  return node
}

const api = async (method, path, body) => {
  const response = await fetch(path, {
    method,
    headers: body !== undefined ? { "content-type": "application/json" } : {},
    body: body !== undefined ? JSON.stringify(body) : undefined
  })
  const json = await response.json().catch(() => ({}))
  if (!response.ok) throw new Error(json.message ?? `${response.status} ${response.statusText}`)
  return json
}

const tokens = (n) => (n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : String(n))

/** What the page shows of one conversation, rebuilt from the snapshot and the events. */
let view = null

const notice = (text, cls = "note") => {
  const transcript = $("transcript")
  transcript.append(el("div", { class: cls }, text))
  transcript.scrollTop = transcript.scrollHeight
}

const showUsage = () => {
  const { task, total } = view.usage
  $("usage").textContent = `this task: ${tokens(task)} tokens · conversation: ${tokens(total.total_tokens)} tokens in ${total.requests} requests`
}

const renderComposer = () => {
  const locked = view?.state.lock ?? null
  const running = view?.state.running ?? false
  $("message").disabled = locked !== null
  $("send").disabled = locked !== null
  $("send").textContent = running ? "Steer" : "Send"
  $("stop").hidden = !running
  if (locked !== null) {
    clearWait()
    const banner = $("banner")
    banner.className = "lock"
    banner.replaceChildren(
      el("span", {}, `The model refused ${locked.credentials}: ${locked.message}. Update the credentials (this unlocks by itself) or press Retry.`),
      el("button", { type: "button", onclick: () => api("POST", `/api/conversations/${view.id}/retry`).catch((e) => notice(e.message, "error")) }, "Retry")
    )
  } else if ($("banner").className === "lock") {
    $("banner").className = ""
    $("banner").replaceChildren()
  }
}

let waitTimer = undefined
/** Moves the running countdown's end earlier by `ms` (a wait announced before this page saw it). */
let shiftWait = (_ms) => {}
const clearWait = () => {
  if (waitTimer !== undefined) clearInterval(waitTimer)
  waitTimer = undefined
  shiftWait = () => {}
  if ($("banner").className === "wait") {
    $("banner").className = ""
    $("banner").replaceChildren()
  }
}

/** A reconnect wait: "retrying in N s" counting down, "Retry now" (skip the wait) and "Abandon" (interrupt). */
const showWait = (ms, why) => {
  clearWait()
  let deadline = Date.now() + ms
  const timer = el("span", { role: "timer", "aria-live": "off" })
  const tick = () => (timer.textContent = `${why} · retrying in ${Math.max(0, Math.ceil((deadline - Date.now()) / 1000))} s`)
  shiftWait = (ago) => {
    deadline -= ago
    tick()
  }
  tick()
  waitTimer = setInterval(tick, 200)
  const banner = $("banner")
  banner.className = "wait"
  banner.replaceChildren(
    timer,
    el("button", { type: "button", onclick: () => api("POST", `/api/conversations/${view.id}/skip-wait`).catch((e) => notice(e.message, "error")) }, "Retry now"),
    el("button", { type: "button", onclick: () => api("POST", `/api/conversations/${view.id}/interrupt`).catch((e) => notice(e.message, "error")) }, "Abandon")
  )
}

const parseArgs = (text) => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** An edit's arguments as removed and added lines. */
const diffOf = (name, args) => {
  if (args === undefined || typeof args !== "object") return undefined
  const lines = (text, cls, mark) => String(text).split("\n").map((line) => el("span", { class: cls }, `${mark} ${line}\n`))
  if (name === "Edit" && typeof args.old_string === "string") {
    return el("pre", { class: "diff" }, `${args.file_path}\n`, ...lines(args.old_string, "del", "-"), ...lines(args.new_string ?? "", "add", "+"))
  }
  if (name === "Write" && typeof args.content === "string") return el("pre", { class: "diff" }, `${args.file_path}\n`, ...lines(args.content, "add", "+"))
  return undefined
}

const callCard = (id, name) => {
  let card = view.calls.get(id)
  if (card === undefined) {
    const root = el("div", { class: "call", "data-call": id })
    card = { root, title: el("h3", {}, name ?? "tool"), args: el("pre", { class: "args" }), approval: el("div"), result: el("div") }
    root.append(card.title, card.args, card.approval, card.result)
    view.calls.set(id, card)
    $("transcript").append(root)
  }
  return card
}

const setArgs = (card, name, raw) => {
  const args = parseArgs(raw)
  card.title.textContent = name
  const diff = diffOf(name, args)
  card.args.replaceWith((card.args = diff ?? el("pre", { class: "args" }, args !== undefined ? JSON.stringify(args, null, 2) : raw)))
}

const answer = (id, decision) =>
  api("POST", `/api/conversations/${view.id}/approvals/${encodeURIComponent(id)}`, { decision }).catch((e) => notice(e.message, "error"))

/** Questions still open when their task ends are closed, so no button offers to answer them. */
const closeQuestions = (why) => {
  for (const card of view.calls.values()) {
    if (card.decided || card.approval.querySelector("button") === null) continue
    card.decided = true
    card.approval.replaceChildren(el("div", { class: "decided" }, why))
  }
}

const steeringText = (text) => /^\[user_steering\]([\s\S]*)\[\/user_steering\]$/.exec(text.trim())?.[1]?.trim()

/**
 * A subagent's event: its tool calls are cards of their own, keyed by its conversation (its call ids
 * may repeat the parent's) and titled with its description; its text reaches the parent as the Task
 * call's result, so it is not shown twice.
 */
const showChild = (e) => {
  if (typeof e.tool_call_id !== "string") return
  const id = `${e.origin.conversation_id}/${e.tool_call_id}`
  show({ ...e, origin: undefined, tool_call_id: id })
  const card = view.calls.get(id)
  if (card !== undefined && !card.title.textContent.startsWith("«")) card.title.textContent = `«${e.origin.description}» ${card.title.textContent}`
}

/** One event of the transcript, from the history or live. */
const show = (e) => {
  if (e.origin !== undefined) return showChild(e)
  const transcript = $("transcript")
  switch (e.type) {
    case "user_message": {
      const steering = steeringText(e.content)
      transcript.append(el("div", { class: `msg user${steering !== undefined ? " steering" : ""}` }, steering ?? e.content))
      break
    }
    case "text_delta":
      if (view.text === null) transcript.append((view.text = el("div", { class: "msg assistant" })))
      view.text.textContent += e.content
      break
    case "assistant_message":
      if (view.text === null) transcript.append(el("div", { class: "msg assistant" }, e.content))
      else view.text.textContent = e.content
      view.text = null
      break
    case "reasoning_delta":
      if (view.reasoning === null) {
        view.reasoning = el("div")
        transcript.append(el("details", { class: "reasoning" }, el("summary", {}, "Reasoning"), view.reasoning))
      }
      view.reasoning.textContent += e.content
      break
    case "reasoning_message":
      if (view.reasoning === null) transcript.append(el("details", { class: "reasoning" }, el("summary", {}, "Reasoning"), el("div", {}, e.content)))
      else view.reasoning.textContent = e.content
      view.reasoning = null
      break
    case "tool_call_delta": {
      const card = callCard(e.tool_call_id, e.name)
      card.args.textContent += e.arguments
      break
    }
    case "tool_call":
      setArgs(callCard(e.tool_call_id, e.name), e.name, e.arguments)
      break
    case "approval_request": {
      const card = callCard(e.tool_call_id, e.name)
      if (card.decided) break
      setArgs(card, e.name, e.arguments)
      card.approval.replaceChildren(el("div", { class: "approval", role: "group", "aria-label": `Approve ${e.name}` },
        el("span", {}, "Run this?"),
        el("button", { type: "button", onclick: () => answer(e.tool_call_id, "allow") }, "Allow"),
        el("button", { type: "button", title: `adds ${e.grant} for this session`, onclick: () => answer(e.tool_call_id, "allow_always") }, "Allow always"),
        el("button", { type: "button", onclick: () => answer(e.tool_call_id, "deny") }, "Deny")))
      break
    }
    case "approval_decision": {
      const card = callCard(e.tool_call_id)
      card.decided = true
      const verb = e.decision === "deny" ? "denied" : e.decision === "allow_always" ? "allowed always" : "allowed"
      const by = e.source === "user" ? "by you" : e.source === "rule" ? `by rule ${e.rule ?? ""}` : `(${e.source}${e.reason ? `: ${e.reason}` : ""})`
      card.approval.replaceChildren(el("div", { class: "decided" }, `${verb} ${by}`))
      break
    }
    case "tool_return": {
      const card = callCard(e.tool_call_id)
      card.result.replaceChildren(el("div", { class: "result" },
        el("span", { class: `status-${e.status}` }, e.status + (e.exit_code !== undefined ? ` (exit ${e.exit_code})` : "")),
        el("pre", {}, e.content)))
      break
    }
    case "request_begin":
      clearWait()
      view.text = null
      view.reasoning = null
      break
    case "request_end":
      if (e.status === "retrying" && e.retry_in_ms !== undefined) showWait(e.retry_in_ms, e.error?.message ?? "the model request failed")
      break
    case "wait":
      if (e.retry_in_ms !== undefined) showWait(e.retry_in_ms, e.reason === "busy" ? "the conversation is busy" : "the stream broke off")
      break
    case "turn_retried":
      notice(`retry ${e.attempt}`)
      break
    case "token_usage":
      view.usage.task += e.total_tokens
      view.usage.total = { ...view.usage.total, total_tokens: view.usage.total.total_tokens + e.total_tokens, requests: view.usage.total.requests + 1 }
      showUsage()
      break
    case "stop_reason":
      clearWait()
      if (e.reason !== "requires_approval") closeQuestions("not answered: the task ended")
      if (e.reason !== "end_turn" && e.reason !== "requires_approval") notice(`stopped: ${e.reason}${e.error ? ` — ${e.error.message}` : ""}`, e.reason === "cancelled" ? "note" : "error")
      break
    case "abort":
      clearWait()
      closeQuestions("not answered: the task stopped")
      notice("stopped")
      break
    case "summary_message":
      transcript.append(el("details", { class: "reasoning" }, el("summary", {}, "Summary of the earlier conversation"), el("div", {}, e.content)))
      break
    case "compaction_begin":
      notice(`compacting the conversation (${e.reason})…`)
      break
    case "compaction_end":
      notice(e.status === "ok" ? "compacted" : `compaction failed${e.error ? `: ${e.error.message}` : ""}`)
      break
  }
  transcript.scrollTop = transcript.scrollHeight
}

const setState = (state) => {
  if (state.notice !== undefined) return notice(state.notice, "error")
  if (state.running && !view.state.running) view.usage.task = 0
  // A finished task moves its conversation up the list.
  if (!state.running && view.state.running) listConversations().catch(() => undefined)
  view.state = state
  renderComposer()
  showUsage()
}

const follow = (after) => {
  const source = new EventSource(`/api/conversations/${view.id}/events?after=${after}`)
  source.addEventListener("message", (m) => show(JSON.parse(m.data)))
  source.addEventListener("state", (m) => setState(JSON.parse(m.data)))
  source.addEventListener("age", (m) => shiftWait(Number(m.data)))
  // What we asked for is gone (another task began while we were away, or the host restarted): load again.
  source.addEventListener("reset", () => open(view.id))
  // The browser reconnects by itself (resuming after the last event); meanwhile say so.
  source.addEventListener("error", () => ($("link").textContent = "connection lost, reconnecting…"))
  source.addEventListener("open", () => ($("link").textContent = ""))
  return source
}

const label = (c) => c.title ?? `Untitled · ${new Date(c.updated_at).toLocaleString([], { dateStyle: "short", timeStyle: "short" })}`

const listConversations = async () => {
  const { conversations, workspace } = await api("GET", "/api/conversations")
  $("workspace").textContent = workspace
  $("conversations").replaceChildren(...conversations.map((c) =>
    el("li", {}, el("button", { type: "button", title: c.id, "aria-current": view?.id === c.id ? "true" : "false", onclick: () => open(c.id) }, label(c)))
  ))
}

const showTitle = (title) => {
  $("title").textContent = title ?? "Untitled conversation"
  $("name").hidden = title !== undefined
}

const open = async (id) => {
  view?.source.close()
  clearWait()
  const snapshot = await api("GET", `/api/conversations/${encodeURIComponent(id)}`)
  view = { id, source: { close() {} }, state: snapshot.state, text: null, reasoning: null, calls: new Map(), usage: { task: 0, total: snapshot.usage } }
  if (location.hash !== `#${id}`) history.replaceState(null, "", `#${id}`)
  showTitle(snapshot.conversation.title)
  $("transcript").replaceChildren()
  for (const item of snapshot.items) show(item)
  view.text = null
  view.reasoning = null
  renderComposer()
  showUsage()
  view.source = follow(snapshot.after)
  await listConversations()
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
    await listConversations()
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
      if (!queued) notice("the task was ending; send that again", "note")
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

const start = async () => {
  await listConversations()
  const wanted = location.hash.slice(1)
  if (wanted !== "") await open(wanted)
  else {
    const first = $("conversations").querySelector("button")
    if (first !== null) first.click()
  }
}
start().catch((e) => notice(e.message, "error"))
