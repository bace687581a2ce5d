#!/usr/bin/env python3
"""The dashboard as a messenger, driven in a real browser (Playwright on Debian's
chromium) against two running nodes, a and b, linked over TCP. Called by
scripts/test-dashboard.sh; the page under test is node a's.

Checks: contacts round-trip (removed, added by invitation link and by peer ID,
renamed, noted, muted, blocked, allow-only), each change seen by `scmesh contacts`;
a message sent from the page reaches `delivered`; messages from b (sent with the
CLI) appear in the open conversation without a reload, and raise the unread count of
a closed one, which opening marks read; a hostile text shows as text and runs no
script; an emergency broadcast from b is marked as one; topics round-trip (subscribe,
publish both ways, unsubscribe); a setting changed and reset; no horizontal scroll at
360 px in any view; no console errors. Every wait is bounded.

Usage: messenger.py SCMESH DATA_A DATA_B CAROL_PEER_ID SCREENSHOT_DIR
"""
import json
import subprocess
import sys
import time

from playwright.sync_api import expect, sync_playwright

SCMESH, DATA_A, DATA_B, CAROL, SHOTS = sys.argv[1:6]
TOPIC = "/dash/test/v1"
HOSTILE = '<img src=x onerror="window.pwned=1">'
expect.set_options(timeout=20_000)


def cli(data, *args):
    done = subprocess.run([SCMESH, *args, "--data-dir", data], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        sys.exit(f"messenger: scmesh {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def cli_json(data, *args):
    return json.loads(cli(data, *args, "--json"))


def until(what, check, seconds=20):
    """Polls check() (a CLI call) until it is true, at most `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    sys.exit(f"messenger: timed out waiting until {what}")


PEER_A = cli(DATA_A, "identity").strip()
PEER_B = cli(DATA_B, "identity").strip()


def contact(data, peer):
    return next((c for c in cli_json(data, "contacts")["contacts"] if c["peer"] == peer), None)


def topic_entry(data):
    return next((t for t in cli_json(data, "topics")["topics"] if t["topic"] == TOPIC), None)


with sync_playwright() as p:
    browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    problems = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: d.accept())
    # stream_seconds=3: the event stream ends every 3 s, so the live updates below also
    # cross EventSource reconnects that resume with Last-Event-ID.
    page.goto(cli(DATA_A, "dashboard", "--print-url").strip().replace("/#", "/?stream_seconds=3#"))
    expect(page.locator("#live")).to_have_text("live")
    view = lambda name: page.click(f'[data-view-button="{name}"]')
    conversation = lambda peer: page.locator(f'[data-testid="conversation"][data-peer="{peer}"]')
    card = lambda peer: page.locator(f'[data-testid="contact"][data-peer="{peer}"]')

    # Contacts. a already has b (b joined a's invitation): remove it, then add it back
    # from b's invitation link; carol by peer ID.
    view("contacts")
    if contact(DATA_A, PEER_B):
        expect(card(PEER_B)).to_have_count(1)
        card(PEER_B).locator('[data-action="remove"]').click()
        expect(card(PEER_B)).to_have_count(0)
        until("b is no contact of a", lambda: contact(DATA_A, PEER_B) is None)
    # A stranger goes by the name it claimed in its handshake, marked "~": a claim, not
    # an alias.
    view("messages")
    expect(conversation(PEER_B).locator(".name")).to_contain_text("~dash-b (")
    view("contacts")
    link = cli_json(DATA_B, "invite")["link"]
    page.get_by_test_id("contact-peer").fill(link)
    page.get_by_test_id("contact-alias").fill("bob")
    page.get_by_test_id("contact-add").click()
    expect(card(PEER_B)).to_have_attribute("data-alias", "bob")
    page.get_by_test_id("contact-peer").fill(CAROL)
    page.get_by_test_id("contact-alias").fill("carol")
    page.get_by_test_id("contact-add").click()
    carol = card(CAROL)
    expect(carol).to_have_attribute("data-alias", "carol")
    expect(carol.get_by_test_id("last-seen")).to_have_text("never seen")
    carol.locator('[data-field="alias"]').fill("carol2")
    carol.locator('[data-field="note"]').fill("met at the <b>market</b>")
    carol.locator('[data-action="save"]').click()
    expect(carol).to_have_attribute("data-alias", "carol2")
    saved = contact(DATA_A, CAROL)
    if saved["alias"] != "carol2" or saved.get("note") != "met at the <b>market</b>":
        sys.exit(f"messenger: rename and note did not reach the node: {saved}")
    carol.locator('[data-action="mute"]').click()
    expect(carol).to_have_attribute("data-muted", "true")
    if CAROL not in cli_json(DATA_A, "contacts").get("muted", []):
        sys.exit("messenger: mute did not reach the node")
    carol.locator('[data-action="mute"]').click()
    expect(carol).to_have_attribute("data-muted", "false")
    carol.locator('[data-action="block"]').click()
    expect(carol).to_have_attribute("data-blocked", "true")
    if not contact(DATA_A, CAROL)["blocked"]:
        sys.exit("messenger: block did not reach the node")
    carol.locator('[data-action="block"]').click()
    expect(carol).to_have_attribute("data-blocked", "false")
    page.get_by_test_id("allow-only").check()
    until("allow-only is on at a", lambda: cli_json(DATA_A, "contacts")["allow_only"] is True)
    page.get_by_test_id("allow-only").uncheck()
    until("allow-only is off at a", lambda: cli_json(DATA_A, "contacts")["allow_only"] is False)
    carol.locator('[data-action="remove"]').click()
    expect(carol).to_have_count(0)
    if contact(DATA_A, CAROL) is not None:
        sys.exit("messenger: carol is still a contact after Remove")

    # Send from the page: Enter sends, Shift+Enter is a new line; the status goes live
    # to delivered.
    view("messages")
    page.get_by_test_id("compose-to").fill(PEER_B[:12])
    text = page.get_by_test_id("compose-text")
    text.fill("hello from the browser")
    text.press("Shift+Enter")
    text.press_sequentially("second line")
    text.press("Enter")
    sent = page.locator('[data-testid="message"][data-direction="out"]', has_text="hello from the browser")
    expect(sent).to_have_attribute("data-status", "delivered")
    expect(sent.locator(".bubble")).to_have_text("hello from the browser\nsecond line")
    expect(conversation(PEER_B)).to_contain_text("bob")
    expect(page.get_by_test_id("compose-to")).to_have_value(PEER_B)
    message_id = sent.get_attribute("data-message-id")
    if not any(m["message_id"] == message_id and m["status"] == "delivered" for m in cli_json(DATA_A, "history", PEER_B)["messages"]):
        sys.exit(f"messenger: message {message_id} is not delivered in a's history")

    # From b into the open conversation, without a reload; it is read at once.
    cli(DATA_B, "send", PEER_A, "reply from b")
    expect(page.locator('[data-testid="message"][data-direction="in"]', has_text="reply from b")).to_be_visible()
    expect(conversation(PEER_B)).to_have_attribute("data-unread", "0")
    until("a has no unread message", lambda: cli_json(DATA_A, "status")["unread"] == 0)
    expect(page.locator('[data-testid="message"][data-direction="in"] .pill')).to_have_text("received")
    page.screenshot(path=f"{SHOTS}/messenger.png", clip={"x": 0, "y": 0, "width": 1280, "height": 600})

    # A file from the picker goes up raw, with its progress, and is delivered.
    page.set_input_files("#compose-file", files=[{"name": "bytes.bin", "mimeType": "application/octet-stream", "buffer": bytes(range(256)) * 40}])
    page.click("#compose-upload")
    expect(page.locator("#upload-status")).to_have_text("bytes.bin sent (10240 bytes)")
    upload = page.locator('[data-testid="message"][data-direction="out"]', has_text="10240 bytes")
    expect(upload).to_have_attribute("data-status", "delivered")

    # A hostile text is text.
    cli(DATA_B, "send", PEER_A, HOSTILE)
    hostile = page.locator('[data-testid="message"][data-direction="in"]', has_text=HOSTILE)
    expect(hostile).to_be_visible()
    expect(hostile.locator(".bubble")).to_have_text(HOSTILE)
    if page.locator("#thread img").count() or page.evaluate("window.pwned !== undefined"):
        sys.exit("messenger: the hostile text was rendered as HTML")

    # Into a closed conversation: its unread count rises; opening it marks it read.
    page.click("#thread-close")
    expect(conversation(PEER_B)).to_have_attribute("aria-current", "false")
    cli(DATA_B, "send", PEER_A, "while the conversation was closed")
    expect(conversation(PEER_B)).to_have_attribute("data-unread", "1")
    expect(page.locator("#unread-total")).to_have_text("1")
    conversation(PEER_B).click()
    expect(page.locator('[data-testid="message"]', has_text="while the conversation was closed")).to_be_visible()
    expect(conversation(PEER_B)).to_have_attribute("data-unread", "0")
    until("a has no unread message after opening", lambda: cli_json(DATA_A, "status")["unread"] == 0)

    # An emergency broadcast from b is marked as one.
    cli(DATA_B, "send", "--emergency", "--broadcast", "fire drill at the dashboard")
    expect(page.get_by_test_id("emergency-broadcast").filter(has_text="fire drill at the dashboard")).to_contain_text("EMERGENCY BROADCAST")
    until("the broadcast shown is read", lambda: cli_json(DATA_A, "status")["unread"] == 0)

    # Topics: subscribe on the page, publish both ways, unsubscribe.
    cli(DATA_B, "subscribe", TOPIC)
    view("topics")
    page.get_by_test_id("topic-name").fill(TOPIC)
    page.get_by_test_id("topic-subscribe").click()
    expect(page.locator(f'[data-testid="topic"][data-topic="{TOPIC}"]')).to_have_attribute("data-subscribed", "true")
    until("a is subscribed", lambda: (topic_entry(DATA_A) or {}).get("subscribed") is True)
    until("each node knows the other's subscription",
          lambda: PEER_B in (topic_entry(DATA_A) or {}).get("peers", []) and PEER_A in (topic_entry(DATA_B) or {}).get("peers", []))
    page.get_by_test_id("topic-text").fill("published from the page")
    page.get_by_test_id("topic-send").click()
    expect(page.locator('[data-testid="topic-message"][data-direction="out"]', has_text="published from the page")).to_be_visible()
    until("b received the page's topic message",
          lambda: any(m.get("topic") == TOPIC and m.get("text") == "published from the page" for m in cli_json(DATA_B, "inbox")["messages"]))
    cli(DATA_B, "publish", TOPIC, "published by b")
    expect(page.locator('[data-testid="topic-message"][data-direction="in"]', has_text="published by b")).to_be_visible()
    until("the topic message shown is read", lambda: cli_json(DATA_A, "status")["unread"] == 0)
    page.locator(f'[data-testid="topic"][data-topic="{TOPIC}"]').get_by_role("button", name="Unsubscribe").click()
    expect(page.locator(f'[data-testid="topic"][data-topic="{TOPIC}"]')).to_have_attribute("data-subscribed", "false")
    until("a is unsubscribed", lambda: (topic_entry(DATA_A) or {}).get("subscribed") is False)

    # A setting changed at run time and back.
    view("mesh")
    page.fill("#set-max", "77")
    page.click("#settings-save")
    until("the relay budget is 77", lambda: cli_json(DATA_A, "settings")["relay_max_per_hour"] == 77)
    expect(page.locator("#settings-note")).to_contain_text("relay_max_per_hour")
    page.click("#settings-reset")
    until("the settings are the config's", lambda: cli_json(DATA_A, "settings")["relay_max_per_hour"] != 77)
    expect(page.locator(f'tr.peer[data-peer="{PEER_B}"]')).to_be_visible()
    page.screenshot(path=f"{SHOTS}/mesh.png", full_page=True)

    # Every control has a name a screen reader can say.
    unnamed = page.evaluate("""() => [...document.querySelectorAll("input, select, textarea, button")]
        .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.textContent.trim())
        .map((e) => e.outerHTML.slice(0, 120))""")
    if unnamed:
        problems.append(f"controls without a label: {unnamed}")

    # 360 px wide: no view scrolls sideways.
    page.set_viewport_size({"width": 360, "height": 780})
    for name in ["mesh", "topics", "contacts", "messages"]:
        view(name)
        expect(page.locator(f"#view-{name}")).to_be_visible()
        width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        if width[0] > width[1]:
            problems.append(f"the {name} view scrolls sideways at 360 px: scrollWidth {width[0]} > clientWidth {width[1]}")
        if name == "messages":
            # The open conversation fills the width; Close goes back to the list.
            expect(page.locator("#thread")).to_be_visible()
            page.screenshot(path=f"{SHOTS}/messenger-360.png")
            page.click("#thread-close")
            expect(conversation(PEER_B)).to_be_visible()
            width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            if width[0] > width[1]:
                problems.append(f"the conversation list scrolls sideways at 360 px: {width[0]} > {width[1]}")
    browser.close()

for problem in problems:
    print("messenger:", problem, file=sys.stderr)
if problems:
    sys.exit(1)
print("messenger: contacts, sending to delivered, live messages, unread, hostile text, emergency broadcast, topics, settings, 360 px: all as expected")
