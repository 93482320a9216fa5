#!/usr/bin/env python3
"""Every relative link in the project's Markdown resolves: the file exists and, for `#anchor`,
the target page has that heading (GitHub's anchors: lowercase, spaces to dashes, punctuation
dropped, `-1`, `-2` for repeats).

    doc_links.py SOURCE_DIR

Prints each broken link as FILE:LINE and exits 1 if there is one. Links inside code spans and
fenced blocks are not links; absolute URLs are not checked (no network)."""
import os
import re
import sys

SKIP_DIRS = {".git", "node_modules"}


def markdown_files(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith("build")]
        for f in files:
            if f.endswith(".md"):
                yield os.path.join(d, f)


def prose_lines(path):
    """(line number, text) of the lines outside fenced blocks, code spans removed."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            m = re.match(r"\s*(```|~~~)", line)
            if m:
                fence = None if fence == m.group(1) else (fence or m.group(1))
                continue
            if fence is None:
                yield no, line


def slug(heading):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link: its text
    text = re.sub(r"[`*]", "", text).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for _, line in prose_lines(path):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
        out.update(re.findall(r'<a\s+(?:name|id)="([^"]+)"', line))
    return out


def main(root):
    root = os.path.abspath(root)
    files = sorted(markdown_files(root))
    known = {}
    broken = checked = 0
    for f in files:
        for no, line in prose_lines(f):
            line = re.sub(r"`[^`]*`", "", line)
            for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line):
                if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                    continue  # https:, mailto:
                checked += 1
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
                where = f"{os.path.relpath(f, root)}:{no}"
                if not os.path.exists(dest):
                    print(f"{where}: {target}: no such file")
                    broken += 1
                elif anchor and dest.endswith(".md"):
                    if dest not in known:
                        known[dest] = anchors(dest)
                    if anchor not in known[dest]:
                        print(f"{where}: {target}: no heading with that anchor in "
                              f"{os.path.relpath(dest, root)}")
                        broken += 1
    print(f"{len(files)} Markdown files, {checked} relative links, {broken} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
