/**
 * A PostgreSQL connection URL as a user gives it (`--database`, BATON_DATABASE_URL): recognised by
 * its scheme, and named in messages without its secrets, since the URL may carry a password.
 */

export const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//i.test(url.trim())

const SECRET_PARAMS = ["password", "sslpassword"]

/**
 * The URL with its password (and any password-like query parameter) replaced by `***`. A URL
 * that does not parse is not shown at all: it cannot be told apart from its secrets.
 */
export const redactUrl = (url: string): string => {
  let parsed: URL
  try {
    parsed = new URL(url.trim())
  } catch {
    return "(a PostgreSQL URL that does not parse; not shown, it may hold a password)"
  }
  const user = parsed.username === "" ? "" : `${decodeURIComponent(parsed.username)}${parsed.password === "" ? "" : ":***"}@`
  // Parameters as a person wrote them (`options=-c search_path=baton`), not percent-encoded.
  const params = [...parsed.searchParams].map(([name, value]) =>
    `${name}=${SECRET_PARAMS.includes(name.toLowerCase()) ? "***" : value}`)
  return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}${params.length === 0 ? "" : `?${params.join("&")}`}`
}

/** Text from a driver or server with the URL, and its password, taken out wherever they appear. */
export const scrubber = (url: string) => {
  const secrets = [url, url.trim()]
  try {
    const parsed = new URL(url.trim())
    if (parsed.password !== "") secrets.push(parsed.password, decodeURIComponent(parsed.password))
    for (const [name, value] of parsed.searchParams) {
      if (SECRET_PARAMS.includes(name.toLowerCase()) && value !== "") secrets.push(value)
    }
  } catch {
    // Unparsable: only the whole text can be recognised.
  }
  const redacted = redactUrl(url)
  const ordered = [...new Set(secrets.filter((s) => s.length > 0))].sort((a, b) => b.length - a.length)
  return (text: string): string =>
    ordered.reduce((out, secret) => out.split(secret).join(secret === url || secret === url.trim() ? redacted : "***"), text)
}
