import * as Data from "effect/Data"
import { commandName, type CommandSpec, docText, type OptionSpec, resolve, type ValueKind } from "./CommandTree.js"

/** A command line the parser refused; `message` is the one line printed after `baton: `. */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

/**
 * A parser error as one line: `<what is wrong>; see \`baton <command> --help\``, naming the
 * option or argument, what it expects and what it was given. @effect/cli's own words name neither
 * ("'abc' is not a integer"), so the option is found again in the command line, by the tree.
 */

const expects = (kind: ValueKind): string => {
  switch (kind._tag) {
    case "Integer":
      return "a whole number"
    case "Choice":
      return `one of ${kind.choices.join(", ")}`
    case "Path":
      return "an existing file"
    case "Bool":
      return "no value"
    default:
      return "a value"
  }
}

/** The option written at `argv[i]` (`--name`, `-w`, `--name=value`) among `options`. */
const optionAt = (options: ReadonlyArray<OptionSpec>, word: string): OptionSpec | undefined => {
  const name = word.startsWith("--") ? word.split("=")[0]! : word
  return options.find((o) => o.names.includes(name))
}

/** Each option written on the line, with the value given to it. */
const written = (command: CommandSpec, rest: ReadonlyArray<string>) => {
  const out: Array<{ readonly option: OptionSpec; readonly value: string | undefined }> = []
  for (let i = 0; i < rest.length; i++) {
    const option = optionAt(command.options, rest[i]!)
    if (option === undefined || option.kind._tag === "Bool") continue
    const eq = rest[i]!.indexOf("=")
    out.push({ option, value: rest[i]!.startsWith("--") && eq > 0 ? rest[i]!.slice(eq + 1) : rest[i + 1] })
  }
  return out
}

export const usageErrorMessage = (tree: CommandSpec, argv: ReadonlyArray<string>, error: { readonly error?: unknown }): string => {
  const { command, rest } = resolve(tree, argv)
  const name = commandName(command)
  const text = docText(error.error).split("\n")[0]!.trim()
  const see = `; see \`${name} --help\``
  const option = (o: OptionSpec) => o.names[0]!
  let m: RegExpMatchArray | null
  if ((m = text.match(/^'(.*)' is not a (\w+)$/)) !== null) {
    const given = m[1]!
    const found = written(command, rest).find((w) => w.value === given)
    if (found !== undefined) return `${option(found.option)} expects ${expects(found.option.kind)}, got '${given}'${see}`
    return `expected ${m[2] === "integer" ? "a whole number" : `a ${m[2]}`}, got '${given}'${see}`
  }
  if ((m = text.match(/^Expected one of the following cases: (.*)$/)) !== null) {
    const choices = m[1]!.split(", ")
    const found = written(command, rest).find((w) =>
      w.option.kind._tag === "Choice" && w.option.kind.choices.join(", ") === m![1] && w.value !== undefined && !choices.includes(w.value)
    )
    if (found !== undefined) return `${option(found.option)} expects one of ${choices.join(", ")}, got '${found.value}'${see}`
    return `expected one of ${choices.join(", ")}${see}`
  }
  if ((m = text.match(/^Missing argument <(.*?)>/)) !== null) {
    const arg = command.args.find((a) => a.name === `<${m![1]}>`)
    return `\`${name}\` needs ${arg?.name ?? `<${m[1]}>`}${arg !== undefined && arg.description !== "" ? ` (${arg.description.replace(/\.$/, "").toLowerCase()})` : ""}, got nothing${see}`
  }
  if ((m = text.match(/^Expected a value following option: '(.*)'$/)) !== null) {
    const found = optionAt(command.options, m[1]!)
    return `${m[1]} expects ${found !== undefined ? expects(found.kind) : "a value"}, got nothing${see}`
  }
  if ((m = text.match(/^Received unknown argument: '(.*)'$/)) !== null) {
    const word = m[1]!
    return word.startsWith("-")
      ? `unknown option ${word} for \`${name}\`${see}`
      : `unexpected argument '${word}' (\`${name}\` takes ${command.args.length === 0 ? "no arguments" : command.args.map((a) => a.name).join(" ")})${see}`
  }
  if ((m = text.match(/^Path '(.*)' must exist$/)) !== null) {
    const arg = command.args.find((a) => a.kind._tag === "Path")
    return `${arg?.name ?? "the file"} expects an existing file, got '${m[1]}' (not found)${see}`
  }
  if (text.startsWith("Invalid subcommand") || command.subcommands.length > 0) {
    const given = rest.find((w) => !w.startsWith("-"))
    const choices = command.subcommands.map((c) => c.path.at(-1)).join(", ")
    return given !== undefined
      ? `unknown command '${given}' for \`${name}\` (one of ${choices})${see}`
      : `\`${name}\` needs a command (one of ${choices})${see}`
  }
  return `${text.replace(/\.$/, "")}${see}`
}
