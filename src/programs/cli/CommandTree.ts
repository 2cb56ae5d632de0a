import * as HelpDoc from "@effect/cli/HelpDoc"

/**
 * The command line as data: each command's path, description, options and arguments, read off the
 * @effect/cli descriptors (their `_tag`ged structure; @effect/cli is pinned, and test/cli/Help.test.ts
 * walks every command through this module). The help pages (HelpPage.ts) and the one-line usage
 * errors (UsageError.ts) are written from it, so an option added anywhere gets both without more code.
 */

export type ValueKind =
  | { readonly _tag: "Bool" }
  | { readonly _tag: "Integer" }
  | { readonly _tag: "Choice"; readonly choices: ReadonlyArray<string> }
  | { readonly _tag: "Text" }
  | { readonly _tag: "Path" }
  | { readonly _tag: "Other"; readonly name: string }

export interface OptionSpec {
  /** `--max-turns`, then its aliases (`-w`). */
  readonly names: ReadonlyArray<string>
  readonly placeholder: string | undefined
  readonly kind: ValueKind
  readonly description: string
  readonly optional: boolean
  readonly repeated: boolean
}

export interface ArgSpec {
  readonly name: string
  readonly kind: ValueKind
  readonly description: string
  readonly optional: boolean
  readonly repeated: boolean
}

export interface CommandSpec {
  /** `["sessions", "show"]`; the root is `[]`. */
  readonly path: ReadonlyArray<string>
  readonly description: string
  readonly options: ReadonlyArray<OptionSpec>
  readonly args: ReadonlyArray<ArgSpec>
  readonly subcommands: ReadonlyArray<CommandSpec>
}

type Node = { readonly _tag: string } & Record<string, unknown>

const isNode = (u: unknown): u is Node => typeof u === "object" && u !== null && typeof (u as { _tag?: unknown })._tag === "string"

export const docText = (doc: unknown): string =>
  isNode(doc) && doc._tag !== "Empty" ? HelpDoc.toAnsiText(doc as unknown as HelpDoc.HelpDoc).replace(/\x1b\[[0-9;]*m/g, "").trim() : ""

/**
 * A description rendered when first read: rendering a HelpDoc runs @effect/printer's layout (a few
 * hundred Effect steps each), and every command would otherwise pay for every page's text at start-up
 * although only a help page or a usage error reads one.
 */
const described = <A extends object>(spec: A, doc: unknown): A & { readonly description: string } => {
  let text: string | undefined
  return Object.defineProperty(spec, "description", { enumerable: true, get: () => (text ??= docText(doc)) }) as A & { readonly description: string }
}

const kindOf = (primitive: unknown): ValueKind => {
  if (!isNode(primitive)) return { _tag: "Other", name: "value" }
  switch (primitive._tag) {
    case "Bool":
    case "Integer":
    case "Path":
      return { _tag: primitive._tag }
    case "Text":
    case "Redacted":
    case "Secret":
      return { _tag: "Text" }
    case "Choice":
      return { _tag: "Choice", choices: (primitive["alternatives"] as ReadonlyArray<readonly [string, unknown]>).map(([choice]) => choice) }
    default:
      return { _tag: "Other", name: primitive._tag.toLowerCase() }
  }
}

interface Found<A> {
  readonly node: Node
  readonly optional: boolean
  readonly repeated: boolean
  readonly value: A
}

/** Every `Single` under an options or args tree, with whether a wrapper made it optional or repeated. */
const singles = (root: unknown): ReadonlyArray<Found<null>> => {
  const out: Array<Found<null>> = []
  const visit = (u: unknown, optional: boolean, repeated: boolean): void => {
    if (!isNode(u)) return
    switch (u._tag) {
      case "Single":
        out.push({ node: u, optional: optional || kindOf(u["primitiveType"])._tag === "Bool", repeated, value: null })
        return
      case "OrElse":
        // Options.optional is `orElse(none)`: both sides are optional.
        visit(u["left"], true, repeated)
        visit(u["right"], true, repeated)
        return
      case "WithDefault":
      case "WithFallback":
      case "WithFallbackConfig":
      case "WithFallbackPrompt":
        visit(u["options"] ?? u["args"], true, repeated)
        return
      case "Variadic": {
        const min = u["min"] as { readonly _tag: string; readonly value?: number } | undefined
        const none = min === undefined || min._tag === "None" || min.value === 0
        visit(u["argumentOption"] ?? u["args"], optional || none, true)
        return
      }
      case "Both":
        visit(u["left"], optional, repeated)
        visit(u["right"], optional, repeated)
        return
      default:
        for (const key of ["options", "args", "argumentOption"]) visit(u[key], optional, repeated)
    }
  }
  visit(root, false, false)
  return out
}

const optionSpec = ({ node, optional, repeated }: Found<null>): OptionSpec => {
  const pseudo = node["pseudoName"] as { readonly _tag: string; readonly value?: string } | undefined
  const kind = kindOf(node["primitiveType"])
  return described({
    names: [node["fullName"] as string, ...(node["aliases"] as ReadonlyArray<string>).map((a) => (a.length === 1 ? `-${a}` : `--${a}`))],
    placeholder: kind._tag === "Bool" ? undefined : kind._tag === "Choice" ? kind.choices.join("|") : pseudo?._tag === "Some" ? pseudo.value : "VALUE",
    kind,
    optional,
    repeated
  }, node["description"])
}

const argSpec = ({ node, optional, repeated }: Found<null>): ArgSpec => {
  const pseudo = node["pseudoName"] as { readonly _tag: string; readonly value?: string } | undefined
  return described({
    name: `<${pseudo?._tag === "Some" ? pseudo.value : node["name"] as string}>`,
    kind: kindOf(node["primitiveType"]),
    optional,
    repeated
  }, node["description"])
}

/** The tree under a Command's descriptor (`command.descriptor`). */
export const commandTree = (descriptor: unknown, parent: ReadonlyArray<string> = []): CommandSpec => {
  let node: unknown = descriptor
  while (isNode(node) && node._tag === "Map") node = node["command"]
  if (isNode(node) && node._tag === "Subcommands") {
    const head = commandTree(node["parent"], parent)
    const children = (node["children"] as ReadonlyArray<unknown>).map((child) => commandTree(child, head.path))
    // Not a spread: it would read (render) the head's description.
    return { path: head.path, get description() { return head.description }, options: head.options, args: head.args, subcommands: children }
  }
  if (!isNode(node) || node._tag !== "Standard") return { path: parent, description: "", options: [], args: [], subcommands: [] }
  const name = node["name"] as string
  return described({
    path: parent.length === 0 && name === "baton" ? [] : [...parent, name],
    options: singles(node["options"]).map(optionSpec),
    args: singles(node["args"]).map(argSpec),
    subcommands: []
  }, node["description"])
}

/** Every command of the tree, depth first. */
export const allCommands = (tree: CommandSpec): ReadonlyArray<CommandSpec> => [tree, ...tree.subcommands.flatMap(allCommands)]

/** The command `argv` names (its leading subcommand names) and the words after them. */
export const resolve = (tree: CommandSpec, argv: ReadonlyArray<string>): { readonly command: CommandSpec; readonly rest: ReadonlyArray<string> } => {
  let command = tree
  let i = 0
  for (; i < argv.length; i++) {
    const next = command.subcommands.find((c) => c.path.at(-1) === argv[i])
    if (next === undefined) break
    command = next
  }
  return { command, rest: argv.slice(i) }
}

export const commandName = (command: CommandSpec): string => ["baton", ...command.path].join(" ")
