#!/bin/sh
# The test command (README): installs what is missing, builds the sandbox library, checks
# format, lint and types, runs every test as the current user, and ends with one line "<user>: N passed, N failed, N skipped".
# Sandbox integration tests run by default here; COOP_SANDBOX_TEST=0 skips them (they are
# then reported as skipped, never as passed).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/bootstrap.sh" || exit 1
cd "$root"
COOP_SANDBOX_TEST=${COOP_SANDBOX_TEST:-1}
export COOP_SANDBOX_TEST
if ! NO_COLOR=1 deno task --quiet check >/dev/null 2>"$root/.coop-check.log"; then
  cat "$root/.coop-check.log"
  rm -f "$root/.coop-check.log"
  echo "$(id -un): 0 passed, 1 failed, 0 skipped (deno task check: format, lint or types)"
  exit 1
fi
rm -f "$root/.coop-check.log"
log=$(mktemp)
NO_COLOR=1 deno test --allow-all --no-prompt tests/ 2>&1 | tee "$log"
# POSIX sh has no pipefail: take deno's verdict from its summary line instead.
# deno test ends with e.g. "ok | 48 passed (3 steps) | 0 failed | 2 ignored (4s)".
summary=$(grep -E '^(ok|FAILED) \| ' "$log" | tail -n 1)
case "$summary" in ok*) status=0 ;; *) status=1 ;; esac
rm -f "$log"
passed=$(echo "$summary" | sed -n 's/.* \([0-9][0-9]*\) passed.*/\1/p')
failed=$(echo "$summary" | sed -n 's/.* \([0-9][0-9]*\) failed.*/\1/p')
skipped=$(echo "$summary" | sed -n 's/.* \([0-9][0-9]*\) ignored.*/\1/p')
if [ -z "$passed" ]; then
  echo "$(id -un): 0 passed, 1 failed, 0 skipped (the test run produced no summary)"
  exit 1
fi
echo "$(id -un): ${passed} passed, ${failed:-0} failed, ${skipped:-0} skipped"
exit $status
