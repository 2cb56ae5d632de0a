// The header panel: what this host runs with — the model, the workspace, the MCP servers and their
// state, the instruction files, the sandbox — each shown only when the host says.
import { $, api, el } from "./dom.js"

const row = (term, ...values) => [el("dt", {}, term), el("dd", {}, ...values)]

export const loadPanel = async () => {
  const info = await api("GET", "/api/info")
  $("model").textContent = info.model ?? ""
  $("workspace").textContent = info.workspace
  $("workspace").title = info.workspace
  const rows = [
    ...(info.model !== undefined ? row("Model", info.model) : []),
    ...row("Workspace", el("code", {}, info.workspace)),
    ...(info.mcp !== undefined
      ? row("MCP servers", info.mcp.length === 0 ? "none" : el("ul", {}, ...info.mcp.map((s) =>
        el("li", {}, el("span", { class: `badge ${s.state === "connected" ? "running" : "waiting"}` }, s.state), " ", s.name, s.tools !== undefined ? ` · ${s.tools} tools` : ""))))
      : []),
    ...(info.instructions !== undefined
      ? row("Instructions", info.instructions.length === 0 ? "none" : el("ul", {}, ...info.instructions.map((p) => el("li", {}, el("code", {}, p)))))
      : []),
    ...(info.sandbox !== undefined
      ? row("Sandbox", info.sandbox.active === false && info.sandbox.mode !== "off"
        ? `none (${info.sandbox.unavailable ?? "unavailable"}): every Bash call is asked`
        : `${info.sandbox.mode} · network ${info.sandbox.network ? "on" : "off"}`)
      : []),
    ...row("Cost", info.priced ? "from settings pricing" : "no pricing in settings")
  ]
  $("panel-body").replaceChildren(el("dl", {}, ...rows))
}
