import { Either } from "effect"

export interface EditRequest {
  readonly old_string: string
  readonly new_string: string
  readonly replace_all?: boolean
}

export interface EditApplied {
  readonly content: string
  readonly replacements: number
  /** 1-based line of the first replacement in the new content. */
  readonly firstLine: number
  /** How many lines the first replacement occupies in the new content. */
  readonly newLines: number
}

const countOccurrences = (haystack: string, needle: string): number => {
  let count = 0
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + needle.length)) count++
  return count
}

const lineOf = (text: string, index: number): number => text.slice(0, index).split("\n").length

/**
 * The Edit tool's text replacement, pure so an approval prompt can preview exactly what Edit will
 * do. `Left` is the message the model gets. `display` names the file in messages.
 */
export const applyEdit = (content: string, edit: EditRequest, display: string): Either.Either<EditApplied, string> => {
  if (edit.old_string === edit.new_string) {
    return Either.left("old_string and new_string are identical; there is nothing to change")
  }
  if (edit.old_string === "") {
    return content === ""
      ? Either.right({ content: edit.new_string, replacements: 1, firstLine: 1, newLines: edit.new_string.split("\n").length })
      : Either.left(`old_string is empty but ${display} is not; give the exact text to replace, or use Write to replace the whole file`)
  }
  const count = countOccurrences(content, edit.old_string)
  if (count === 0) {
    return Either.left(
      `old_string was not found in ${display}. It must match the file exactly, including whitespace and indentation; Read the file and copy the text`
    )
  }
  if (count > 1 && edit.replace_all !== true) {
    return Either.left(
      `old_string occurs ${count} times in ${display}; include more surrounding lines to make it unique, or set replace_all to true to replace every occurrence`
    )
  }
  const first = content.indexOf(edit.old_string)
  // split/join rather than String.replace, whose `$&`-style patterns would rewrite new_string.
  const next = edit.replace_all === true
    ? content.split(edit.old_string).join(edit.new_string)
    : content.slice(0, first) + edit.new_string + content.slice(first + edit.old_string.length)
  return Either.right({
    content: next,
    replacements: edit.replace_all === true ? count : 1,
    firstLine: lineOf(next, first),
    newLines: edit.new_string.split("\n").length
  })
}
