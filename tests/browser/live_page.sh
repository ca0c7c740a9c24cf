#!/usr/bin/env bash
# The live page in a real browser, in a network namespace with no interface but lo (as root;
# without it the test cannot keep to loopback and fails): a run that finishes a row only
# when told (live_page_run) is read by headless chromium before and after one row finished,
# and the two DOM snapshots must differ in what the run reports (parents delivered, the
# Call's finished Grains); the page's own redraw script runs with no console message; the
# endpoint is gone once the run returned; bound to 0.0.0.0 the page refuses a request
# without the printed token and serves the URL with it. The screenshot is kept in
# ARTIFACTS/live_page.png.
# Usage: live_page.sh LIVE_PAGE_RUN ARTIFACTS
set -euo pipefail
run=$1
artifacts=$2
if [[ ${LIVE_PAGE_INSIDE:-} != 1 ]]; then
  browser=$(command -v chromium || command -v chromium-browser || true)
  [[ -n $browser ]] || { echo "live_page: no chromium (scripts/install-deps.sh)" >&2; exit 1; }
  unshare --net true 2>/dev/null ||
    { echo "live_page: needs root for a loopback-only network namespace (unshare --net)" >&2; exit 1; }
  exec unshare --net env LIVE_PAGE_INSIDE=1 bash "$0" "$@"
fi
ip link set lo up
browser=$(command -v chromium || command -v chromium-browser)
mkdir -p "$artifacts"
work=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "live_page: $*" >&2; exit 1; }

wait_for() {  # FILE: waits up to 60 s for it
  for _ in $(seq 600); do [[ -e $1 ]] && return 0; sleep 0.1; done
  fail "no $1 within 60 s"
}
browse() {  # URL OUT [chromium flags]: the DOM after the page loaded
  local url=$1 out=$2
  shift 2
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --enable-logging=stderr --v=0 "$@" --dump-dom "$url" \
    > "$out" 2>> "$work/console.log"
}
get_status() {  # PORT TARGET: the HTTP status line's code, or "closed"
  if ! exec 3<>"/dev/tcp/127.0.0.1/$1" 2>/dev/null; then echo closed; return; fi
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
  head -1 <&3 | cut -d' ' -f2
  exec 3<&-
}

# 1. On 127.0.0.1: two snapshots, one row apart.
gate=$work/gate
mkdir -p "$gate"
"$run" "$gate" 127.0.0.1 2> "$work/run.log" &
pid=$!
wait_for "$gate/url"
url=$(cat "$gate/url")
port=${url##*:}
port=${port%%/*}
[[ $url == http://127.0.0.1:*/ ]] || fail "the URL on loopback is $url"
browse "$url" "$work/before.html"
touch "$gate/release-0"
wait_for "$gate/delivered-0"
# The redraw script runs here (virtual time lets its one-second poll fire).
browse "$url" "$work/after.html" --virtual-time-budget=2500 --window-size=1000,2200 \
  --screenshot="$artifacts/live_page.png"
parents() { grep -o "<p id=\"now-parents\">[^<]*" "$1" | sed 's/.*>//'; }
before=$(parents "$work/before.html")
after=$(parents "$work/after.html")
[[ $before == "0 of 3 parents delivered" ]] || fail "before the first row: '$before'"
[[ $after == "1 of 3 parents delivered" ]] || fail "after the first row: '$after'"
grep -q "WaitForRelease#0" "$work/after.html" || fail "the Call is not named"
grep -q "Live: redrawn every second" "$work/after.html" || fail "no live status"
# The page's script ran under its Content-Security-Policy and swapped a fresh body in.
grep -q '<body data-redraws="[1-9]' "$work/after.html" || fail "the page did not redraw itself"
touch "$gate/release-1" "$gate/release-2"
wait "$pid" || fail "the run failed: $(cat "$work/run.log")"
pid=
[[ $(get_status "$port" /) == closed ]] || fail "the endpoint outlived its run"

# 2. On 0.0.0.0 (every interface; here only lo exists): the token is required.
gate=$work/gate-any
mkdir -p "$gate"
"$run" "$gate" 0.0.0.0 2> "$work/run.log" &
pid=$!
wait_for "$gate/url"
url=$(cat "$gate/url")
[[ $url == http://0.0.0.0:*/?token=* ]] || fail "no token in the URL bound beyond loopback: $url"
port=${url#http://0.0.0.0:}
port=${port%%/*}
token=${url##*token=}
[[ $(get_status "$port" /) == 403 ]] || fail "a request without the token was not refused"
[[ $(get_status "$port" "/?token=wrong") == 403 ]] || fail "a wrong token was not refused"
[[ $(get_status "$port" "/?token=$token") == 200 ]] || fail "the token was refused"
browse "http://127.0.0.1:$port/?token=$token" "$work/token.html"
grep -q "<h1>Live run</h1>" "$work/token.html" || fail "the page with the token did not load"
touch "$gate/release-0" "$gate/release-1" "$gate/release-2"
wait "$pid" || fail "the second run failed: $(cat "$work/run.log")"
pid=

if grep -q 'CONSOLE' "$work/console.log"; then
  grep 'CONSOLE' "$work/console.log" >&2
  fail "the page logged to the console"
fi
[[ -s $artifacts/live_page.png ]] || fail "no screenshot"
echo "live_page: OK (0 -> 1 of 3 parents between snapshots; token required on 0.0.0.0)"
