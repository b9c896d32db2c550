# Sourced by ./coop and scripts/test.sh: makes Deno available and the sandbox library current.
# Needs only Node/npm (Deno comes from the npm registry, pinned in tools/package-lock.json)
# and gcc. Expects $root to be the checkout.
if [ ! -x "$root/tools/node_modules/.bin/deno" ]; then
  echo "coop: installing Deno from the npm registry (first run)…" >&2
  npm ci --prefix "$root/tools" --no-audit --no-fund --loglevel=error >&2
fi
PATH="$root/tools/node_modules/.bin:$PATH"
export PATH
deno run --quiet --allow-read --allow-write --allow-run=gcc "$root/scripts/build_ffi.ts" >&2
