// A tool call's card: one line while collapsed (the tool, what it touches, how it ended, a live
// elapsed time while it runs); expanded, the arguments as the terminal shows them (an Edit's or
// Write's diff with line numbers and context, a command as typed) and the result (a command's
// output with its ANSI colours, images inline). The diff is the terminal's own (domain/CallPreview).
import { callHeader, editDiff, editDiffAfter, writePreview } from "../../../domain/CallPreview.js"
import { ansiNodes } from "./ansi.js"
import { el, plural, seconds } from "./dom.js"
import { renderMarkdown } from "./markdown.js"

const parse = (raw) => {
  try {
    const value = JSON.parse(raw === "" ? "{}" : raw)
    return typeof value === "object" && value !== null ? value : {}
  } catch {
    return undefined
  }
}

/** The diff as the terminal prints it: line number, mark, text; context dimmed. */
export const diffView = (lines) =>
  el("pre", { class: "diff" }, ...lines.map((l) => {
    if (l._tag === "Note") return el("span", { class: "dl note" }, `${l.text}\n`)
    const [cls, mark] = l._tag === "Added" ? ["add", "+"] : l._tag === "Removed" ? ["del", "-"] : ["ctx", " "]
    return el("span", { class: `dl ${cls}` }, el("span", { class: "ln", "aria-hidden": "true" }, String(l.line)), el("span", { class: "mark" }, mark), `${l.text}\n`)
  }))

const changes = (lines) => {
  const added = lines.filter((l) => l._tag === "Added").length
  const removed = lines.filter((l) => l._tag === "Removed").length
  return `+${added} −${removed}`
}

/** An Edit's diff before it ran: the bare replacement (the host sends the real one with its question). */
const bareDiff = (call) => editDiff(call, undefined).filter((l) => l._tag !== "Note")

const argsView = (card) => {
  const call = { name: card.name, arguments: card.raw }
  const args = parse(card.raw)
  if (args === undefined) return el("pre", { class: "args" }, card.raw)
  switch (card.name) {
    case "Edit":
      return diffView(card.diff ?? bareDiff(call))
    case "Write":
      return diffView(card.diff ?? writePreview(call, 2000))
    case "Bash":
      return el("div", {},
        el("pre", { class: "terminal command" }, el("span", { class: "prompt", "aria-hidden": "true" }, "$ "), String(args.command ?? "")),
        typeof args.description === "string" ? el("p", { class: "hint" }, args.description) : undefined)
    default: {
      const rows = Object.entries(args)
      if (rows.length === 0) return el("p", { class: "hint" }, "no arguments")
      return el("dl", { class: "args" }, ...rows.flatMap(([key, value]) => [
        el("dt", {}, key),
        el("dd", {}, typeof value === "string" ? value : JSON.stringify(value, null, 2))
      ]))
    }
  }
}

const outcomeOf = (card, e) => {
  if (e.status === "denied" || e.status === "interrupted") return [e.status]
  const time = e.duration_ms !== undefined ? seconds(e.duration_ms) : undefined
  const lines = e.content.replace(/\n+$/, "").split("\n").filter((l) => l !== "").length
  switch (card.name) {
    case "Bash":
      return [e.exit_code !== undefined ? `exit ${e.exit_code}` : e.status === "error" ? "error" : undefined, time]
    case "Read":
      return e.status === "error" ? ["error"] : [plural(e.content.split("\n").filter((l) => /^\s*\d+\t/.test(l)).length || lines, "line")]
    case "Edit":
    case "Write":
      return e.status === "error" ? ["error"] : [card.diff !== undefined ? changes(card.diff) : undefined]
    case "Grep":
    case "Glob":
    case "LS":
      return e.status === "error" ? ["error"] : [plural(lines, "line")]
    default:
      return [e.status === "error" ? "error" : undefined, time]
  }
}

const setOutcome = (card, parts) => (card.outcome.textContent = parts.filter(Boolean).map((p) => ` · ${p}`).join(""))

const stopClock = (card) => {
  if (card.clock !== undefined) clearInterval(card.clock)
  card.clock = undefined
  card.elapsed.textContent = ""
}

/** A running call counts its seconds on its line. */
export const startClock = (card) => {
  stopClock(card)
  const since = Date.now()
  const tick = () => (card.elapsed.textContent = ` · ${Math.floor((Date.now() - since) / 1000)} s`)
  tick()
  card.clock = setInterval(tick, 500)
  card.root.dataset.state = "running"
}

export const newCard = (id, name) => {
  const tool = el("b", { class: "tool" }, name || "tool")
  const subject = el("span", { class: "subject" })
  const outcome = el("span", { class: "outcome" })
  const elapsed = el("span", { class: "elapsed" })
  const args = el("div", { class: "call-args" })
  const result = el("div", { class: "call-result" })
  const body = el("div", { class: "call-body" }, args, result)
  const details = el("details", {}, el("summary", {}, el("span", { class: "dot", "aria-hidden": "true" }), tool, " ", subject, outcome, elapsed), body)
  const approval = el("div", { class: "approval-slot" })
  const root = el("article", { class: "call", "data-call": id, "data-state": "pending" }, details, approval)
  return { root, details, tool, subject, outcome, elapsed, args, result, body, approval, name: name || "tool", raw: "", diff: undefined, clock: undefined }
}

/** The call's arguments so far (streaming) or complete. */
export const setCall = (card, name, raw) => {
  card.name = name || card.name
  card.raw = raw
  card.root.dataset.tool = card.name
  const header = callHeader({ name: card.name, arguments: raw })
  card.tool.textContent = header.tool
  card.subject.textContent = header.subject
  if (card.name === "Edit" && card.diff === undefined && parse(raw) !== undefined && card.root.dataset.state !== "done") setOutcome(card, [changes(bareDiff({ name: card.name, arguments: raw }))])
  card.args.replaceChildren(argsView(card))
}

/** The diff the host computed against the file as it is (sent with the question). */
export const setPreview = (card, preview) => {
  if (!Array.isArray(preview) || preview.length === 0 || !["Edit", "Write"].includes(card.name)) return
  card.diff = preview
  setOutcome(card, [changes(preview)])
  card.args.replaceChildren(argsView(card))
}

export const setResult = (card, e) => {
  stopClock(card)
  card.root.dataset.state = e.status === "success" ? "done" : e.status
  if (card.name === "Edit" && e.status === "success") {
    const after = editDiffAfter({ name: "Edit", arguments: card.raw }, e.content)
    if (after !== undefined) card.diff = after
    card.args.replaceChildren(argsView(card))
  }
  setOutcome(card, outcomeOf(card, e))
  const label = el("span", { class: `status status-${e.status}` }, e.status + (e.exit_code !== undefined ? ` (exit ${e.exit_code})` : ""))
  const output = card.name === "Bash"
    ? el("pre", { class: "terminal output" }, ...ansiNodes(e.content))
    : card.name === "Task" && e.status === "success"
    ? el("div", { class: "markdown" })
    : card.diff !== undefined && e.status === "success"
    ? el("p", { class: "hint" }, e.content.split("\n")[0].replace(/ The result around line \d+:$/, ""))
    : el("pre", { class: `output${e.status === "error" ? " failed" : ""}` }, e.content)
  if (output.className === "markdown") renderMarkdown(output, e.content)
  const images = (e.images ?? []).map((image, i) =>
    el("img", { class: "tool-image", src: `data:${image.media_type};base64,${image.data}`, alt: `image ${i + 1} from ${card.name}` }))
  card.result.replaceChildren(el("div", { class: "result" }, label, output, ...images))
}

/** A call that will not run now (its task ended or stopped first). */
export const settleCard = (card, why) => {
  stopClock(card)
  if (card.root.dataset.state === "running" || card.root.dataset.state === "pending") {
    card.root.dataset.state = "interrupted"
    setOutcome(card, [why])
  }
}
