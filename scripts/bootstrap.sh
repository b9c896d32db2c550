# Sourced by ./coop and scripts/test.sh: makes Deno available and the sandbox library current.
# Needs only Node/npm (Deno comes from the npm registry, pinned exactly in tools/package.json)
# and gcc. Expects $root to be the checkout.
if [ ! -x "$root/tools/node_modules/.bin/deno" ]; then
  echo "coop: installing Deno from the npm registry (first run)…" >&2
  # --no-package-lock: npm 11 locks only this platform's optional binaries and then refuses
  # the lock elsewhere; the exact version in tools/package.json is the pin.
  npm install --prefix "$root/tools" --no-package-lock --no-audit --no-fund --loglevel=error >&2
fi
PATH="$root/tools/node_modules/.bin:$PATH"
# Deno trusts only its bundled roots by default; machines behind a TLS-inspecting proxy add
# its CA to the system store, which npm already uses.
DENO_TLS_CA_STORE=${DENO_TLS_CA_STORE:-mozilla,system}
export PATH DENO_TLS_CA_STORE
deno run --quiet --allow-read --allow-write --allow-env --allow-run=gcc "$root/scripts/build_ffi.ts" >&2
