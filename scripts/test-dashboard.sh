#!/usr/bin/env bash
# The HTTP API against real node processes, once: two scmesh nodes connected over TCP
# on loopback, a message sent between them, then
#   1. the dashboard loaded in headless Chromium (Debian's `chromium`): the rendered DOM
#      must show the peer, the message with its status `delivered` and the invitation's
#      QR code; a screenshot is kept as an artefact (ARTEFACTS_DIR, default
#      .build/artefacts/dashboard.png), and zbarimg must read that QR code in it back
#      as an invitation that `scmesh join` on the other node accepts;
#   2. cross-site requests in a real browser (Playwright for Python driving the same
#      chromium): logged in to the dashboard, the browser visits a page served on
#      another 127.0.0.1 port that POSTs to the node with the session cookie (a
#      text/plain send, a contact, a form); none of them may change anything, while the
#      dashboard page itself still can;
#   3. the page as a messenger (scripts/dashboard/messenger.py, Playwright): contacts,
#      topics and settings round-trip, a message sent from the page is delivered,
#      messages from the other node arrive live, a hostile text stays text, no view
#      scrolls sideways at 360 px, no console errors; it writes the screenshots
#      messenger.png (the conversation view, as in docs/) and mesh.png to ARTEFACTS_DIR;
#   4. an OpenAPI conformance run of schemathesis (PyPI) against the running node,
#      with a bounded number of examples per operation.
# Installs chromium, playwright and schemathesis when missing. Usage: scripts/test-dashboard.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if ! python3 -m schemathesis.cli --version >/dev/null 2>&1 && ! command -v schemathesis >/dev/null 2>&1; then
  python3 -m pip install -q "schemathesis==4.32.5"
fi
SCHEMATHESIS=$(command -v schemathesis || echo "python3 -m schemathesis.cli")
# Playwright drives Debian's chromium; it downloads no browser of its own.
python3 -c "import playwright" >/dev/null 2>&1 || python3 -m pip install -q "playwright==1.65.2"

# SCMESH=path uses an scmesh already built.
if [ -z "${SCMESH:-}" ]; then
  swift build --product scmesh >/dev/null
  SCMESH="$(swift build --show-bin-path)/scmesh"
fi
ARTEFACTS_DIR=${ARTEFACTS_DIR:-.build/artefacts}
mkdir -p "$ARTEFACTS_DIR"
WORK=$(mktemp -d /tmp/scmesh-dash-XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() { echo "test-dashboard: FAIL: $*" >&2; exit 1; }
# Polls a command until it succeeds (at most ~20 s).
until_ok() {
  local what=$1; shift
  for _ in $(seq 1 200); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  fail "timed out waiting until $what"
}
json_field() { python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1]) or "")' "$1"; }

PORT=$((20000 + RANDOM % 12000))
ONLY=(--set transports.mdns.enabled=false --set transports.ble.enabled=false --set transports.loopback.enabled=false
  --set http.listen=127.0.0.1:0 --set node.name=dash-a)
"$SCMESH" run --data-dir "$WORK/a" --set "transports.tcp.listen=127.0.0.1:$PORT" "${ONLY[@]}" 2>"$WORK/a.log" &
PIDS+=($!)
"$SCMESH" run --data-dir "$WORK/b" --set "transports.tcp.listen=127.0.0.1:0" --set "transports.tcp.bootstrap=127.0.0.1:$PORT" \
  "${ONLY[@]/dash-a/dash-b}" 2>"$WORK/b.log" &
PIDS+=($!)

until_ok "node a answers" "$SCMESH" status --data-dir "$WORK/a"
until_ok "node b answers" "$SCMESH" status --data-dir "$WORK/b"
ADDRESS=$("$SCMESH" status --data-dir "$WORK/a" --json | json_field http_address)
[ -n "$ADDRESS" ] || fail "node a reports no http_address"
grep -q "http api listening on http://$ADDRESS/" "$WORK/a.log" || fail "node a's log does not name its HTTP address"
PEER_B=$("$SCMESH" identity --data-dir "$WORK/b")
until_ok "a has a link to b" sh -c "'$SCMESH' peers --full --data-dir '$WORK/a' | grep -q $PEER_B"

# A message through the CLI (raw bytes over the HTTP API), waiting for its receipt.
SENT=$(printf 'hello from the dashboard test' | "$SCMESH" send --data-dir "$WORK/a" --wait --json "$PEER_B" -)
MESSAGE=$(echo "$SENT" | json_field message_id)
[ "$(echo "$SENT" | json_field status)" = delivered ] || fail "the message was not delivered: $SENT"

# 1. The dashboard in a real browser. Each load logs in with a new one-time URL.
load() {
  local profile=$1; shift
  local url
  url=$("$SCMESH" dashboard --data-dir "$WORK/a" --print-url)
  # Virtual time stands still while a fetch is pending, and an event stream never ends:
  # stream_seconds=1 makes the page ask the node to end each stream after a second
  # (EventSource then reconnects with Last-Event-ID, as after any drop).
  url=${url/\/#/\/?stream_seconds=1#}
  timeout "${LOAD_SECONDS:-90}" chromium --headless=new --no-sandbox --disable-gpu --user-data-dir="$WORK/$profile" \
    --virtual-time-budget=5000 --window-size=1280,1400 "$@" "$url" 2>"$WORK/chromium-$profile.log"
}
load dom --dump-dom >"$WORK/dom.html" || fail "chromium could not load the dashboard (see $WORK/chromium-dom.log)"
python3 - "$WORK/dom.html" "$PEER_B" "$MESSAGE" <<'PY' || fail "the dashboard's DOM lacks the peer or the delivered message"
import re, sys
dom, peer, message = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
problems = []
if f'data-peer="{peer}"' not in dom:
    problems.append(f"peer {peer} not in the peers table")
row = re.search(r'<tr class="message" data-message-id="%s">(.*?)</tr>' % message, dom, re.S)
if not row:
    problems.append(f"message {message} not in the messages table")
elif "delivered" not in row.group(1):
    problems.append(f"message {message} shown without status delivered: {row.group(1)[:300]}")
if '<b id="network-quality">poor</b>' not in dom:
    problems.append("the header does not show network quality poor (a has one peer)")
if 'class="pill running">live' not in dom and "reconnecting" not in dom:
    problems.append("the event stream never connected")
if not re.search(r'<span class="mono">#\d+</span> message_delivered', dom):
    problems.append("the events list shows no message_delivered event from the stream")
qr = re.search(r'<div class="qr" data-qr-link="(scmesh:[A-Za-z0-9_-]+)"><svg [^>]*data-qr-version="\d+"[^>]*>.*?<path fill="#000" d="M[^"]+"', dom, re.S)
if not qr:
    problems.append("the invitation's QR code (an SVG with its link) is not on the page")
else:
    open(sys.argv[1] + ".link", "w").write(qr.group(1))
banner = re.search(r'<div id="banner"[^>]*>([^<]*)<', dom)
if banner and banner.group(1).strip():
    problems.append("the page shows an error: " + banner.group(1).strip())
for p in problems:
    print("test-dashboard:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
# The screenshot is of the page exactly as that load rendered it: its DOM, scripts
# removed, loaded from a file with no network and no virtual time: a screenshot of the
# live page (--screenshot with --virtual-time-budget) can hang capturing a frame while
# virtual time waits on the event stream, where --dump-dom does not. So the QR code
# decoded below is the very one the DOM check saw.
# The invitation is on the Contacts view, so that view is the one shown.
python3 - "$WORK/dom.html" "$WORK/rendered.html" <<'PY'
import re, sys
dom = open(sys.argv[1]).read()
dom = re.sub(r'<body data-view="[a-z]+"', '<body data-view="contacts"', dom, count=1)
open(sys.argv[2], "w").write(re.sub(r"<script\b.*?</script>", "", dom, flags=re.S))
PY
shot_taken=false
for try in 1 2 3; do
  if timeout 60 chromium --headless=new --no-sandbox --disable-gpu --user-data-dir="$WORK/shot$try" --window-size=1280,1400 \
    --screenshot="$ARTEFACTS_DIR/dashboard.png" "file://$WORK/rendered.html" >/dev/null 2>"$WORK/chromium-shot$try.log"; then
    shot_taken=true
    break
  fi
  echo "test-dashboard: screenshot try $try failed (exit status or 60 s timeout); $(tail -n 3 "$WORK/chromium-shot$try.log" | tr '\n' ' ')" >&2
done
$shot_taken || fail "chromium could not take the screenshot in three tries"
[ -s "$ARTEFACTS_DIR/dashboard.png" ] || fail "no screenshot written"
# The QR code as the browser drew it must decode (zbarimg, an independent decoder) to
# the invitation link the page shows, and that link must be a valid invitation to a.
SCANNED=$(zbarimg --quiet --raw "$ARTEFACTS_DIR/dashboard.png" 2>/dev/null | head -n 1) || fail "zbarimg found no QR code in the screenshot"
[ "$SCANNED" = "$(cat "$WORK/dom.html.link")" ] || fail "the screenshot's QR code reads \"$SCANNED\", not the page's invitation link"
"$SCMESH" join --data-dir "$WORK/b" --json "$SCANNED" | grep -q "\"peer\":\"$("$SCMESH" identity --data-dir "$WORK/a")\"" ||
  fail "the scanned invitation is not one to node a"
grep -q "#login=" "$WORK/a.log" "$WORK/b.log" && fail "a login token reached a node's log"
echo "test-dashboard: the dashboard shows peer ${PEER_B:0:8}… and message ${MESSAGE:0:8}… delivered; screenshot $ARTEFACTS_DIR/dashboard.png"

# 2. Cross-site requests from another local port, in a real browser with a session.
TOKEN=$(cat "$WORK/a/api.token")
EVIL_DIR="$WORK/evil"
mkdir -p "$EVIL_DIR"
cat >"$EVIL_DIR/attack.html" <<HTML
<!doctype html><title>attack</title>
<iframe name="sink" style="display:none"></iframe>
<form id="f" method="POST" enctype="text/plain" target="sink" action="http://$ADDRESS/api/v1/messages?to=$PEER_B">
<input name="from a form" value="x"></form>
<script>
(async () => {
  const node = "http://$ADDRESS";
  const tries = [
    fetch(node + "/api/v1/messages?to=$PEER_B", { method: "POST", mode: "no-cors", credentials: "include",
      headers: { "Content-Type": "text/plain" }, body: "sent by another port" }),
    fetch(node + "/api/v1/contacts", { method: "POST", mode: "no-cors", credentials: "include",
      headers: { "Content-Type": "text/plain" }, body: JSON.stringify({ alias: "mallory", peer: "$PEER_B" }) }),
  ];
  for (const t of tries) { try { await t; } catch (e) {} }
  document.getElementById("f").submit();
  await new Promise(r => document.querySelector("iframe").onload = r);
  document.title = "done";
})();
</script>
HTML
EVIL_PORT=$((20000 + RANDOM % 12000))
python3 -m http.server --bind 127.0.0.1 --directory "$EVIL_DIR" "$EVIL_PORT" >"$WORK/evil.log" 2>&1 &
PIDS+=($!)
until_ok "the other port's server answers" curl -sf "http://127.0.0.1:$EVIL_PORT/attack.html"
messages_to_b() {
  curl -sf -H "Authorization: Bearer $TOKEN" "http://$ADDRESS/api/v1/messages?peer=$PEER_B&limit=100" |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("messages", [])))'
}
BEFORE=$(messages_to_b)
LOGIN_URL=$("$SCMESH" dashboard --data-dir "$WORK/a" --print-url)
timeout 120 python3 - "$LOGIN_URL" "$PEER_B" "http://127.0.0.1:$EVIL_PORT/attack.html" "http://$ADDRESS" <<'PY' ||
import sys
from playwright.sync_api import sync_playwright
login, peer, attack, node = sys.argv[1:5]
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
    page = browser.new_context().new_page()
    page.goto(login.replace("/#", "/?stream_seconds=1#"))
    page.wait_for_selector(f'tr.peer[data-peer="{peer}"]', state="attached", timeout=30000)
    cookies = page.context.cookies()
    if not any(c["name"].startswith("scmesh_session_") for c in cookies):
        sys.exit(f"no per-node session cookie after login: {cookies}")
    page.goto(attack)
    page.wait_for_function("document.title === 'done'", timeout=30000)
    # The dashboard itself may still change a setting with the same cookie.
    page.goto(node + "/?stream_seconds=1")
    page.wait_for_selector(f'tr.peer[data-peer="{peer}"]', state="attached", timeout=30000)
    status = page.evaluate("""async () => (await fetch("/api/v1/settings", { method: "PATCH", credentials: "same-origin",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify({ relay_enabled: true }) })).status""")
    if status != 200:
        sys.exit(f"the dashboard's own PATCH /api/v1/settings answered {status}")
    browser.close()
PY
  fail "the browser session (login, the other port's page, the dashboard's own request) did not run through"
AFTER=$(messages_to_b)
[ "$AFTER" = "$BEFORE" ] || fail "a page on another port sent a message with the dashboard's cookie ($BEFORE -> $AFTER messages to b)"
curl -sf -H "Authorization: Bearer $TOKEN" "http://$ADDRESS/api/v1/contacts" | grep -q mallory &&
  fail "a page on another port added a contact with the dashboard's cookie"
echo "test-dashboard: a page on another 127.0.0.1 port could neither send nor add a contact with the session cookie"

# 3. The messenger, driven. Carol is an identity with no node, added by peer ID.
mkdir -p "$WORK/c"
CAROL=$("$SCMESH" identity --create --data-dir "$WORK/c")
timeout 180 python3 scripts/dashboard/messenger.py "$SCMESH" "$WORK/a" "$WORK/b" "$CAROL" "$ARTEFACTS_DIR" ||
  fail "the messenger in the browser did not behave (see above)"

# 4. OpenAPI conformance: schemathesis against the running node (a bounded number of
# examples; the event stream never ends, so it is left to the Swift tests). Every check
# but positive_data_acceptance: schema-valid requests the node rightly refuses by
# meaning (an alias that is no contact, "text" and "payload_base64" together) are 400.
$SCHEMATHESIS run "http://$ADDRESS/api/v1/openapi.json" --header "Authorization: Bearer $TOKEN" \
  --exclude-path /api/v1/events --max-examples "${SCHEMATHESIS_EXAMPLES:-10}" --checks all \
  --exclude-checks positive_data_acceptance \
  --request-timeout 20 >"$WORK/schemathesis.log" 2>&1 || { tail -n 80 "$WORK/schemathesis.log"; fail "schemathesis found a mismatch"; }
tail -n 5 "$WORK/schemathesis.log"
echo "test-dashboard: schemathesis conformance passed"
