#!/usr/bin/env bash
# The report page in a real browser: a small pdf2md run (one corrupt document named with
# HTML in it) drawn by `rayorch report`, loaded by headless chromium from a local file in a
# network namespace with no interface but lo. Checks, from the DOM chromium built: every
# Call by name, the parents delivered and failed (and the failed ones in the failures
# table), nothing from the report turned into an element; and that the page logged nothing
# to the console. The screenshot is kept in
# ARTIFACTS/report_page.png.
# Usage: report_page.sh RAYORCH_CLI ARTIFACTS
set -euo pipefail
cli=$1
artifacts=$2
browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $browser ]]; then
  echo "report_page: no chromium (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$cli" make-samples "$work/in" --docs 3 --max-pages 2 --corrupt 0 >/dev/null
printf 'not a pdf' > "$work/in/<img src=x onerror=alert(1)>.pdf"
status=0
"$cli" pdf2md "$work/in" -o "$work/out" --dpi 60 --report "$work/run.json" --no-progress -q \
  >/dev/null || status=$?
[[ $status -eq 1 ]] || { echo "report_page: pdf2md exited $status, expected 1" >&2; exit 1; }
"$cli" report "$work/run.json" -o "$work/run.html" >/dev/null

# Only loopback: the page must not need the network, and cannot reach it here.
isolate=()
if unshare --net true 2>/dev/null; then isolate=(unshare --net); fi
run_browser() {
  timeout 120 "${isolate[@]}" "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --enable-logging=stderr --v=0 "$@" "file://$work/run.html"
}
run_browser --dump-dom > "$work/dom.html" 2> "$work/console.log"
run_browser --window-size=1000,2600 --screenshot="$artifacts/report_page.png" \
  > /dev/null 2>> "$work/console.log"

fail() { echo "report_page: $*" >&2; exit 1; }
for call in $(jq -r '.calls[].call' "$work/run.json"); do
  grep -q "<td class=\"call-name\">$call</td>" "$work/dom.html" || fail "Call $call not shown"
done
delivered=$(jq '.roots_delivered' "$work/run.json")
failed=$(jq '[.roots_by_outcome | to_entries[] | select(.key != "present") | .value] | add' \
  "$work/run.json")
[[ $delivered -eq 4 && $failed -eq 1 ]] || fail "the run delivered $delivered, $failed failed"
grep -q "<th>parents delivered</th><td>$delivered</td>" "$work/dom.html" ||
  fail "parents delivered ($delivered) not shown"
grep -q "<th>parents present</th><td>3</td>" "$work/dom.html" || fail "parents present not shown"
# The failed parents in the failures table, grouped by Call and cause.
grouped=$(grep -oP '<tr class="failure">(<td[^>]*>[^<]*</td>){3}<td>\K[0-9]+' "$work/dom.html" |
  awk '{ n += $1 } END { print n + 0 }')
[[ $grouped -eq $failed ]] || fail "the failures table has $grouped parents, the run $failed"
# The corrupt document's name is text in the page, never an element.
grep -q '&lt;img src=x onerror=alert(1)&gt;' "$work/dom.html" || fail "the HTML name is not shown"
if grep -q '<img' "$work/dom.html"; then fail "a name from the report became an element"; fi
if grep -q 'CONSOLE' "$work/console.log"; then
  grep 'CONSOLE' "$work/console.log" >&2
  fail "the page logged to the console"
fi
[[ -s $artifacts/report_page.png ]] || fail "no screenshot"
echo "report_page: OK ($(jq '.calls | length' "$work/run.json") Calls, screenshot $artifacts/report_page.png)"
