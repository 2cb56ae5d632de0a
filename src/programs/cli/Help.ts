import { VERSION } from "../../services/Version.js"

/**
 * `baton`, `baton --help` and `baton --version`, answered without loading Effect: the first thing a
 * person runs should be instant and short. Each command's full help (`baton run --help`) comes from
 * @effect/cli; test/cli/Help.test.ts checks this page names every command and option it defines.
 */
export const rootHelp = (color: boolean): string => {
  const b = (text: string) => (color ? `\x1b[1m${text}\x1b[22m` : text)
  const d = (text: string) => (color ? `\x1b[2m${text}\x1b[22m` : text)
  return `${b("baton")} ${VERSION} — an agent runtime: a model proposes tool calls, you (or your rules) approve them, Baton runs them.

${b("Usage")}
  baton run [options] <prompt>     one task, then exit: the answer on stdout, progress on stderr
                                   (--json: every event as one JSON object per line)
  baton chat [options]             an interactive session: streaming answers, approval prompts, Ctrl-C interrupts
  baton sessions list              conversations, newest first          ${d("(--json, --limit N, --all)")}
  baton sessions show <id>         a conversation's history             ${d("(--json)")}
  baton sessions export <id>       its trace as trace_001.jsonl, …      ${d("(--out DIR)")}
  baton sessions fork <id>         a new conversation from its context  ${d("(--at N, --json)")}
  baton usage                      tokens and cost per conversation and model ${d("(--json, --conversation ID, --since YYYY-MM-DD)")}
  baton mcp list                   the workspace's MCP servers and their tools ${d("(--json)")}
  baton serve                      host conversations over HTTP + SSE   ${d("(--host, --port, --token, --passivation MS; --cluster)")}
  baton web                        a live page for this workspace: approve, steer, stop ${d("(--port, --host, --token)")}
  baton replay <cassette>          run a recorded task again, no model needed
  baton demo [--fast]              see it work: a recorded coding task, no API key, no network

${b("Options")} ${d("(run, chat, replay)")}
  --provider P          openai-chat | anthropic | openai-responses | replay   ${d("BATON_PROVIDER")}
  --model NAME          the model                                             ${d("BATON_MODEL")}
  --base-url URL        e.g. http://127.0.0.1:11434/v1 for Ollama             ${d("BATON_BASE_URL")}
  -w, --workspace DIR   where the tools work (default: the current directory)
  -c, --continue        continue the latest conversation of this workspace
  --conversation ID     continue that conversation
  --approve MODE        calls the rules leave open: ask | allow | deny
                        ${d("(chat asks; run denies unless told; nothing is approved by a prompt when stdin is not a terminal)")}
  --image FILE          attach an image to run's prompt (repeatable; @file.png in chat)
  --max-turns N         stop a task after N model turns
  --sandbox MODE        where Bash runs: workspace-write | read-only | off     ${d("BATON_SANDBOX (default workspace-write where bwrap runs)")}
  --no-project-instructions  a new conversation without the AGENTS.md / CLAUDE.md files ${d("(settings: projectInstructions)")}
  --home DIR            conversations and settings.json                      ${d("BATON_HOME, default ~/.baton")}
  --server URL          use a \`baton serve\` backend instead of the local one   ${d("BATON_TOKEN for its token")}

${b("Cluster")} ${d("(baton serve --cluster: every runner on one --database PostgreSQL shares the conversations)")}
  --runner-host H --runner-port N    this runner's address for the others   ${d("default 127.0.0.1:34431")}
  --shard-lock-expiration MS         a lost runner's conversations move after this ${d("BATON_SHARD_LOCK_EXPIRATION_MS, default 10000")}

${b("Keys")} come only from the environment: BATON_API_KEY, or OPENAI_API_KEY / ANTHROPIC_API_KEY
(each sent only to its own vendor's hosts), or settings apiKeyHelper (a command printing the key). Settings: $BATON_HOME/settings.json, <workspace>/.baton/settings.json;
MCP servers also from <workspace>/.mcp.json.
Exit codes: 0 done · 1 failed · 2 usage or configuration · 3 authentication · 130 interrupted.

\`baton <command> --help\` lists every option of a command.
`
}

/** The invocations this page answers by itself. */
export const quickAnswer = (argv: ReadonlyArray<string>): "help" | "version" | undefined =>
  argv.length === 0 || (argv.length === 1 && (argv[0] === "--help" || argv[0] === "-h"))
    ? "help"
    : argv.length === 1 && argv[0] === "--version"
    ? "version"
    : undefined
