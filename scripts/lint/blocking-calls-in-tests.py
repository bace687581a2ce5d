#!/usr/bin/env python3
"""Lint: a test's blocking socket call must run on a thread of its own.

Every test target runs in one process, and Swift's cooperative pool has one thread per
core. A test that blocks a pool thread in `read`/`write`/`recv`/`send`/`connect`/
`accept` on a raw socket while a server in the same process must answer it can starve
that server and deadlock the whole run (a CI run that hangs). The rule: such calls are
made inside `onOwnThread { ... }` (MeshTesting), or live in helpers whose callers do.

A tripwire, not a proof: every test file that makes a raw blocking socket call (no
MSG_DONTWAIT on the line, no O_NONBLOCK just before it; `connect` to loopback is left out, the kernel completes it
without the server) must name `onOwnThread`, either calling it or saying in the
helper's doc comment that its callers must. Adding such a call to a file that does
neither fails the test script with the line to look at.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
RAW_CALL = re.compile(
    r"(?<![\w.])(?:Glibc\.)?(?:recv|recvfrom|send|sendto|accept)\(\s*(?:fd|descriptor|socket|sock|self\.fd)\b"
    r"|Glibc\.(?:read|write)\(")
NON_BLOCKING = "MSG_DONTWAIT"


def main():
    problems = []
    checked = 0
    for path in sorted((ROOT / "Tests").rglob("*.swift")):
        text = path.read_text()
        lines = text.splitlines()
        hits = [i for i, line in enumerate(lines)
                if RAW_CALL.search(line.split("//")[0]) and NON_BLOCKING not in line
                and not any("O_NONBLOCK" in earlier for earlier in lines[max(0, i - 8):i])]
        if not hits:
            continue
        checked += 1
        if "onOwnThread" in text:
            continue
        for i in hits:
            problems.append(f"{path.relative_to(ROOT)}:{i + 1}: raw blocking socket call in a file that never names "
                            "`onOwnThread`; make it inside `onOwnThread { ... }` (or document that callers must)")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} raw blocking socket call(s) may block Swift's cooperative pool in tests "
              "(scripts/lint/blocking-calls-in-tests.py says why)", file=sys.stderr)
        return 1
    print(f"blocking-call lint: {checked} test file(s) with raw blocking socket calls, each under the onOwnThread rule")
    return 0


if __name__ == "__main__":
    sys.exit(main())
