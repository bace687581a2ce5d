#!/usr/bin/env python3
"""Lint: every relative link in every Markdown file resolves.

For each Markdown file in the repository (tracked or new, .gitignore respected), every
inline link or image `[text](target)` and every reference definition `[name]: target`
whose target is not a URL (`http:`, `mailto:`, `doc:`, ...) must name a file or folder
that exists, relative to the file. A `#anchor` must match a heading of the target
Markdown file (GitHub's rule: lower case, punctuation dropped, spaces to hyphens, `-1`,
`-2` for repeats) or an explicit `<a id="...">`/`<a name="...">`. Links inside code
blocks and code spans are not links and are skipped.

Prints each broken link as `FILE:LINE: what` and exits 1 if there is any.
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def markdown_files():
    listing = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.md"],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return sorted({ROOT / name for name in listing.split("\0") if name and (ROOT / name).is_file()})


def prose_lines(text):
    """Yields (line number, line) outside fenced code blocks, with code spans blanked."""
    fence = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if fence is None and marker:
            fence = marker.group(1)[0] * len(marker.group(1))
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        yield number, re.sub(r"(`+)(.+?)\1", lambda m: " " * len(m.group(0)), line)


def slug(heading):
    text = re.sub(r"<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


anchor_cache = {}


def anchors(path):
    if path not in anchor_cache:
        found, seen = set(), {}
        text = path.read_text(encoding="utf-8")
        for _, line in prose_lines(text):
            found.update(HTML_ANCHOR.findall(line))
        fence = None
        for line in text.splitlines():
            marker = re.match(r"\s*(`{3,}|~{3,})", line)
            if marker:
                fence = None if fence else marker.group(1)
                continue
            heading = None if fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if heading:
                base = slug(heading.group(1).replace("`", ""))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else f"{base}-{count}")
        anchor_cache[path] = found
    return anchor_cache[path]


def check(path):
    problems = []
    text = path.read_text(encoding="utf-8")
    for number, line in prose_lines(text):
        targets = INLINE.findall(line)
        reference = REFERENCE.match(line)
        if reference:
            targets.append(reference.group(1))
        for target in targets:
            if SCHEME.match(target):
                continue
            file_part, _, anchor = target.partition("#")
            destination = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(ROOT)}:{number}"
            if not destination.exists():
                problems.append(f"{where}: {target}: no such file or folder")
            elif anchor and destination.suffix == ".md" and anchor.lower() not in anchors(destination):
                problems.append(f"{where}: {target}: no heading or anchor #{anchor} in {destination.relative_to(ROOT)}")
    return problems


def main():
    files = markdown_files()
    problems = [problem for path in files for problem in check(path)]
    for problem in problems:
        print(problem)
    if problems:
        print(f"markdown-links: {len(problems)} broken relative link(s) in {len(files)} Markdown files;"
              " fix the path or the #anchor (anchors are GitHub heading slugs)")
        return 1
    print(f"markdown-links: every relative link resolves ({len(files)} Markdown files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
