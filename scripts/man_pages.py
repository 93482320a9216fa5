#!/usr/bin/env python3
"""ward's manual pages: render them for installation, and check them against `--help`.

  man_pages.py check WARD MAN_DIR [--stubs]
      Lists every difference between what `WARD ... --help` offers and what man/ documents:
      subcommands without a page, pages without a subcommand, options a command has and its page
      does not document, options a page documents that the command does not have. Exit 1 when
      there is any. With --stubs, each missing option comes with a roff item to paste (its text
      taken from --help; rewrite it into a sentence).
  man_pages.py render MAN_DIR OUT_DIR VERSION
      Writes each page with its includes expanded and @VERSION@ replaced.

How a page documents options (the check reads the pages this way):
  - man/ward.1 is `ward` itself; man/ward-SUB.1 is `ward SUB` and every command below it.
  - An option is documented by a .TP item whose tag line starts with it:
        .TP
        \\fB\\-p\\fR, \\fB\\-\\-profile\\fR \\fINAME\\fR
    Every option word of the tag line counts (-p and --profile here).
  - An item belongs to the page's command, or, after a `.SS "ward SUB SUBSUB ..."` heading, to
    that command (until the next .SH or .SS).
  - A line `.\\" @include FILE` is replaced by man/FILE (the options several commands share).
    `.\\" @include FILE except --OPT...` leaves out the .TP items of FILE whose tag line names
    one of those options (for a command that hides a few of the shared options); naming an
    option FILE has no item for is an error.
  - -h/--help is on every command and never required.
"""
import os
import re
import subprocess
import sys

HELP_OPTIONS = {"-h", "--help"}
INCLUDE = re.compile(r'^\.\\"\s*@include\s+(\S+)(?:\s+except((?:\s+--?[A-Za-z0-9-]+)+))?\s*$')
OPTION_WORD = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][A-Za-z0-9-]*)")


# ---- what ward offers -------------------------------------------------------------------------

class Command:
    def __init__(self, path):
        self.path = path  # ("audit", "list")
        self.options = {}  # option word -> (all words of its item, description)
        self.subcommands = []


def ward_help(ward, path):
    out = subprocess.run([ward, *path, "--help"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"`{' '.join(['ward', *path, '--help'])}` failed ({out.returncode}): {out.stderr}")
    return out.stdout


def parse_help(text, command):
    section = None
    last = None
    for line in text.splitlines():
        if re.match(r"^\S.*:$", line):
            section = line[:-1]
            continue
        # "Options" and every group of options (e.g. `ward why`'s "Run options (...)").
        options = section is not None and section not in ("Subcommands", "Positionals")
        if options and re.match(r"^  -", line):
            spec, _, desc = line.strip().partition("  ")
            words = spec.split()[0].split(",")
            last = (tuple(words), desc.strip())
            for w in words:
                command.options[w] = last
        elif options and last and line.startswith("      ") and not last[1]:
            last = (last[0], line.strip())
            for w in last[0]:
                command.options[w] = last
        elif section == "Subcommands" and re.match(r"^  [a-z]", line):
            command.subcommands.append(line.split()[0])


def command_tree(ward, path=()):
    command = Command(path)
    parse_help(ward_help(ward, path), command)
    tree = {path: command}
    for sub in command.subcommands:
        tree.update(command_tree(ward, path + (sub,)))
    return tree


# ---- what the pages document ------------------------------------------------------------------

def read_page(man_dir, name, seen=()):
    """The lines of a page, includes expanded: (text, "man/FILE:LINE" it came from)."""
    lines = []
    with open(os.path.join(man_dir, name), encoding="utf-8") as f:
        for number, line in enumerate(f.read().splitlines(), 1):
            m = INCLUDE.match(line)
            if m:
                if m.group(1) in seen:
                    sys.exit(f"man/{name}: includes {m.group(1)} in a loop")
                included = read_page(man_dir, m.group(1), seen + (name,))
                if m.group(2):
                    included = without_items(included, m.group(2).split(), f"man/{name}:{number}")
                lines.extend(included)
            else:
                lines.append((line, f"man/{name}:{number}"))
    return lines


def without_items(lines, options, where):
    """lines without the .TP items (the .TP, its tag line and the lines up to the next request
    that starts another item or section) whose tag line names one of `options`."""
    out = []
    left_out = set()
    skipping = False
    for i, (line, origin) in enumerate(lines):
        if line.startswith((".TP", ".SH", ".SS", ".PP", ".IP")):
            skipping = False
            if line.startswith(".TP") and i + 1 < len(lines):
                named = set(OPTION_WORD.findall(plain(lines[i + 1][0]).strip())) & set(options)
                if named:
                    left_out |= named
                    skipping = True
        if not skipping:
            out.append((line, origin))
    unknown = [o for o in options if o not in left_out]
    if unknown:
        sys.exit(f"{where}: @include ... except {' '.join(unknown)}: the file has no item for it")
    return out


def plain(roff):
    """The text of a roff line: escapes and font changes removed, \\- as -."""
    s = roff.replace("\\-", "-").replace("\\(em", "-")
    s = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", s)
    s = re.sub(r'^\.(B|I|BR|BI|RB|IR|RI|IB)\s+', "", s)
    return s.replace('"', "").replace("\\ ", " ").replace("\\&", "")


def heading_command(heading, page_path):
    """("audit", "list") for .SS "ward audit list [--json]"; None for another heading."""
    words = plain(heading).split()
    if not words or words[0] != "ward":
        return None
    path = []
    for w in words[1:]:
        if not re.fullmatch(r"[a-z][a-z0-9-]*", w):
            break
        path.append(w)
    return tuple(path)


def documented(lines, page_path):
    """{command path: {option word: where}} of the items of a page, and
    {included file: command paths whose items it holds}."""
    docs = {}
    includes = {}
    current = page_path
    for i, (line, where) in enumerate(lines):
        origin = where.rsplit(":", 1)[0][len("man/"):]
        if origin.endswith(".man"):
            includes.setdefault(origin, set()).add(current)
        if line.startswith(".SH"):
            current = page_path
        elif line.startswith(".SS"):
            named = heading_command(line[3:], page_path)
            current = named if named is not None else page_path
            docs.setdefault(current, {})
        elif line.startswith(".TP") and i + 1 < len(lines):
            tag = plain(lines[i + 1][0]).strip()
            if tag.startswith("-"):
                for word in OPTION_WORD.findall(tag):
                    docs.setdefault(current, {})[word] = lines[i + 1][1]
    return docs, includes


# ---- the check --------------------------------------------------------------------------------

def page_of(path):
    return "ward.1" if not path else f"ward-{path[0]}.1"


def stub(words, desc):
    tag = ", ".join("\\fB" + w.replace("-", "\\-") + "\\fR" for w in words)
    return f"    .TP\n    {tag}\n    {desc or 'TODO: say what it does.'}"


def check(ward, man_dir, stubs):
    tree = command_tree(ward)
    problems = []
    pages = sorted(p for p in os.listdir(man_dir) if p.endswith(".1"))
    top = {p for p in tree if len(p) == 1}
    for path in sorted(top):
        if page_of(path) not in pages:
            problems.append(f"man/{page_of(path)}: missing: `ward {path[0]}` has no page "
                            "(copy the page of a similar command and adapt it)")
    pages_read = {}
    for page in pages:
        m = re.fullmatch(r"ward-(.+)\.1", page)
        page_path = (m.group(1),) if m else ()
        if page != "ward.1" and page_path not in tree:
            problems.append(f"man/{page}: ward has no subcommand `{m.group(1) if m else page}` "
                            "(remove the page, or rename it after the subcommand)")
            continue
        lines = read_page(man_dir, page)
        docs, includes = documented(lines, page_path)
        pages_read[page] = (lines, docs, includes)

    docs = {}
    includes = {}
    for _, page_docs, page_includes in pages_read.values():
        for path, options in page_docs.items():
            docs.setdefault(path, {}).update(options)
        for name, paths in page_includes.items():
            includes.setdefault(name, set()).update(paths)

    # Options every command that includes a shared file has, and none documents: once, there.
    missing = {}
    for path, command in tree.items():
        if page_of(path) not in pages_read:
            continue
        for word, (words, desc) in command.options.items():
            if word not in HELP_OPTIONS and word not in docs.get(path, {}):
                missing.setdefault(path, {})[words] = desc
    for name, paths in sorted(includes.items()):
        shared = set.intersection(*(set(missing.get(p, {})) for p in paths))
        for words in sorted(shared):
            desc = missing[next(iter(paths))][words]
            users = ", ".join(" ".join(("ward",) + p) for p in sorted(paths))
            problems.append(f"man/{name}: missing: {', '.join(words)} (\"{desc}\"), which every "
                            f"command that includes it has ({users})")
            if stubs:
                problems.append(stub(words, desc))
            for p in paths:
                del missing[p][words]
    for path, options in sorted(missing.items()):
        name = " ".join(("ward",) + path)
        where = f'under .SS "{name}"' if len(path) > 1 else "under .SH OPTIONS"
        for words, desc in sorted(options.items()):
            problems.append(f"man/{page_of(path)}: missing: `{name}` has {', '.join(words)} "
                            f"(\"{desc}\"), not documented {where}")
            if stubs:
                problems.append(stub(words, desc))

    extra = {}
    for page, (_, page_docs, _) in sorted(pages_read.items()):
        for path, options in sorted(page_docs.items()):
            name = " ".join(("ward",) + path)
            if path not in tree:
                problems.append(f"man/{page}: has a section for `{name}`, which ward does not "
                                "have")
                continue
            for word, where in options.items():
                if word not in tree[path].options:
                    extra.setdefault((where, word), []).append(name)
    for (where, word), names in sorted(extra.items()):
        problems.append(f"{where}: documents {word} for {', '.join(f'`{n}`' for n in names)}, "
                        "whose --help does not list it (remove it or fix its name)")

    if "ward.1" in pages_read:
        text = "\n".join(line for line, _ in pages_read["ward.1"][0])
        for path in sorted(top):
            reference = "ward\\-" + path[0].replace("-", "\\-") + " (1)"
            if reference not in text:
                problems.append(f"man/ward.1: missing: does not name ward-{path[0]}(1) (add it "
                                "to COMMANDS and SEE ALSO)")
    for p in problems:
        print(p)
    if problems:
        count = len([p for p in problems if p.startswith("man/")])
        print(f"{count} difference(s) between man/ and --help; "
              "scripts/man_pages.py check WARD man --stubs prints roff items to paste",
              file=sys.stderr)
    return 1 if problems else 0


def render(man_dir, out_dir, version):
    os.makedirs(out_dir, exist_ok=True)
    for page in sorted(p for p in os.listdir(man_dir) if p.endswith(".1")):
        text = "\n".join(line for line, _ in read_page(man_dir, page)) + "\n"
        with open(os.path.join(out_dir, page), "w", encoding="utf-8") as f:
            f.write(text.replace("@VERSION@", version))
    return 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "check":
        return check(argv[1], argv[2], "--stubs" in argv[3:])
    if len(argv) == 4 and argv[0] == "render":
        return render(argv[1], argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 125


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
