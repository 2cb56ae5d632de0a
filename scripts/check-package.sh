#!/usr/bin/env bash
# The package as users get it: packs the tarball (prepack builds the CLI, the library and its types),
# checks what it holds, installs it into a scratch global prefix and runs the CLI there with no other
# step, then installs it into a scratch app next to the app's own `effect` and runs examples/ against
# the installed package (tsc strict, then node and @effect/vitest). Called by .ci/run after `npm ci`.
# Everything goes to a temp dir, deleted at the end; installs prefer the npm cache.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/baton-package-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-package: $*" >&2; exit 1; }
step() { echo "check-package: $*" >&2; }
npm_quiet=(--prefer-offline --no-audit --no-fund --loglevel=error)

cd "$root"
version="$(node -p 'require("./package.json").version')"
dev() { node -p "require('$root/package.json').devDependencies['$1']"; }

# BATON_PACKAGE_TARBALL: check a tarball packed before (while working on this script) instead of packing.
if [ -n "${BATON_PACKAGE_TARBALL:-}" ]; then
  tarball="$BATON_PACKAGE_TARBALL"
else
  step "npm pack"
  tarball="$tmp/$(npm pack --pack-destination "$tmp" --silent | tail -n 1)"
fi
[ -f "$tarball" ] || fail "npm pack made no tarball"
tar -tzf "$tarball" | sed 's|^package/||' | sort >"$tmp/contents"
grep -qE '^(test|bench|\.ci|fixtures)/|^scripts/|^test/fixtures/' "$tmp/contents" && fail "the tarball holds files users never run: $(grep -E '^(test|bench|\.ci|scripts)/' "$tmp/contents" | head -3 | tr '\n' ' ')"
for required in bin/baton.js dist/bin/baton.js dist/lib/programs/session/Session.js dist/types/programs/session/Session.d.ts \
  dist/types/services/Testing.d.ts demo/cassette.jsonl README.md LICENSE CHANGELOG.md; do
  grep -qx "$required" "$tmp/contents" || fail "the tarball lacks $required"
done
step "$(basename "$tarball"): $(du -k "$tarball" | cut -f1) kB, $(wc -l <"$tmp/contents") files"

step "npm install -g (a scratch prefix)"
global="$tmp/global"
npm install -g "$tarball" --prefix "$global" "${npm_quiet[@]}" >/dev/null
baton="$global/bin/baton"
[ "$("$baton" --version)" = "$version" ] || fail "baton --version does not print $version"
"$baton" --help | grep -q "baton demo" || fail "baton --help does not show the overview"
"$baton" run --help | grep -q '\$ baton run' || fail "baton run --help does not name the program"
(cd "$tmp" && BATON_HOME="$tmp/demo-home" "$baton" demo --fast >"$tmp/demo.out" 2>&1) || { cat "$tmp/demo.out" >&2; fail "baton demo --fast failed"; }
installed="$(npm ls -g --prefix "$global" --all --parseable | tail -n +2 | sort -u)"
# A dev-only dependency (the test runner, the compiler, the browser driver…) must not come along.
dev_only="$(node -p 'const p = require("./package.json"); Object.keys(p.devDependencies).filter((n) => !(n in (p.peerDependencies ?? {}))).join("\n")')"
while read -r name; do
  echo "$installed" | grep -q "/node_modules/$name\$" && fail "the global install holds the dev dependency $name"
done <<<"$dev_only"
step "global install: $(du -sh "$global" | cut -f1), $(echo "$installed" | wc -l) packages"

step "npx from the tarball"
# --ignore-scripts: the install above proved the native addon builds; `--version` needs no SQLite.
[ "$(cd "$tmp" && npm exec --yes --ignore-scripts --package "$tarball" "${npm_quiet[@]}" -- baton --version)" = "$version" ] || fail "npx baton --version"

step "a scratch app: effect + the tarball"
app="$tmp/app"
mkdir -p "$app"
cp "$root"/examples/*.ts "$app/"
cat >"$app/package.json" <<EOF
{ "name": "baton-example-app", "private": true, "type": "module" }
EOF
cat >"$app/tsconfig.json" <<EOF
{
  "compilerOptions": {
    "target": "ES2022", "lib": ["ES2023"], "module": "NodeNext", "moduleResolution": "NodeNext", "types": ["node"],
    "strict": true, "exactOptionalPropertyTypes": true, "noUncheckedIndexedAccess": true, "skipLibCheck": false,
    "outDir": "out", "rootDir": "."
  },
  "include": ["*.ts"]
}
EOF
# The app's own Effect packages (Baton's peers, at the versions it is tested with), then Baton.
peers="$(node -p 'Object.entries(require("./package.json").peerDependencies).map(([n, v]) => n + "@" + v).join(" ")')"
# shellcheck disable=SC2086
# --ignore-scripts, then the SQLite addon the global install built (the same version, the same Node):
# without a prebuilt binary to download, building it again would double the check's time.
(cd "$app" && npm install "${npm_quiet[@]}" --ignore-scripts $peers "$tarball" \
  "typescript@$(dev typescript)" "@types/node@$(dev @types/node)" "vitest@$(dev vitest)" "@effect/vitest@$(dev @effect/vitest)" >/dev/null)
addon() { node -p "require('$1/node_modules/better-sqlite3/package.json').version"; }
if [ "$(addon "$app")" = "$(addon "$global/lib/node_modules/baton")" ]; then
  cp -r "$global/lib/node_modules/baton/node_modules/better-sqlite3/build" "$app/node_modules/better-sqlite3/"
else
  (cd "$app" && npm rebuild better-sqlite3 "${npm_quiet[@]}" >/dev/null)
fi
copies="$(cd "$app" && npm ls effect --all --parseable | sort -u | wc -l)"
[ "$copies" = "1" ] || { (cd "$app" && npm ls effect --all) >&2; fail "the app has $copies copies of effect"; }
step "npm ls effect: one copy"

step "examples: tsc --strict against the installed package, then run"
(cd "$app" && npx tsc -p . ) || fail "the examples do not typecheck against the installed package"
(cd "$app" && node out/scripted.js >"$tmp/scripted.out" 2>&1) || { cat "$tmp/scripted.out" >&2; fail "examples/scripted.ts failed"; }
(cd "$app" && node out/remote.js >"$tmp/remote.out" 2>&1) || { cat "$tmp/remote.out" >&2; fail "examples/remote.ts failed"; }
# No model configured: the example must say so and exit 2 (it never reaches a network here).
set +e
(cd "$app" && env -u BATON_MODEL -u BATON_PROVIDER -u BATON_API_KEY -u OPENAI_API_KEY -u ANTHROPIC_API_KEY node out/embed.js >"$tmp/embed.out" 2>&1)
code=$?
set -e
[ "$code" = "2" ] && grep -q "^embed: no model configured" "$tmp/embed.out" || { cat "$tmp/embed.out" >&2; fail "examples/embed.ts without a model: exit $code"; }
(cd "$app" && npx vitest run --config /dev/null replay.test.ts >"$tmp/vitest.out" 2>&1) || { cat "$tmp/vitest.out" >&2; fail "examples/replay.test.ts failed"; }
step "ok"
