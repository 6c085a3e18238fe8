#!/usr/bin/env python3
"""Checks that README.md and docs/**/*.md still point at things that exist: every relative markdown
link (and its #anchor, by GitHub's heading slugs), every repo path a ```sh/bash/console block names,
and the README's length (<= 300 lines). Prints each broken item as file:line and exits 1.
Python 3 standard library only. Usage: tests/scripts/test_docs.py [REPO_ROOT] (default: this
file's repository), so a planted break can be tried on a copy in /tmp."""
import os
import re
import sys

README_MAX_LINES = 300
# Command-block tokens that start with one of these name files that exist without a build.
REPO_PREFIXES = ("scripts/", "sweeps/", "docs/", "examples/", "results/", "include/", "tests/",
                 ".ci/", ".github/", "fuzz/", "bench/")
# Flags whose argument is a file or folder the command creates, so it need not exist yet.
OUTPUT_FLAGS = {"-o", "--out", "--json", "--markdown", "--report", "--csv", "--params",
                "--check-out", "--save-tensors", "-B", "--prefix"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
COMMAND_LANGS = {"sh", "bash", "console", "shell"}


def blank(text, start, end):
    """text with [start, end) replaced by spaces, newlines kept, so offsets and lines still match."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def split_fences(text):
    """(prose with fenced blocks and inline code blanked, [(first_line, lang, [lines])] of the blocks)."""
    lines = text.split("\n")
    blocks, out, i = [], [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        marker, lang, body, first = m.group(2), m.group(3).lower(), [], i + 1
        out.append("")
        i += 1
        while i < len(lines) and not lines[i].lstrip().startswith(marker):
            body.append(lines[i])
            out.append("")
            i += 1
        if i < len(lines):
            out.append("")
            i += 1
        blocks.append((first + 1, lang, body))
    prose = "\n".join(out)
    prose = re.sub(r"<!--.*?-->", lambda m: re.sub(r"[^\n]", " ", m.group(0)), prose, flags=re.S)
    prose = re.sub(r"(`+)(?:(?!\1).)+?\1", lambda m: re.sub(r"[^\n]", " ", m.group(0)), prose, flags=re.S)
    return prose, blocks


def github_slug(heading):
    """GitHub's anchor for a heading: markup dropped, lowercase, every character that is not a
    letter, digit, space, - or _ removed (GitHub keeps _), spaces to -."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            prose, _ = split_fences(f.read())
        seen, slugs = {}, set()
        for line in prose.split("\n"):
            m = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            slug = github_slug(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            slugs.add(slug if n == 0 else f"{slug}-{n}")
        cache[path] = slugs
    return cache[path]


def check_link(root, md, target):
    """None if target resolves, else the reason."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
        return None  # http:, https:, mailto:: not this test's business
    path, _, anchor = target.partition("#")
    dest = md if path == "" else os.path.normpath(os.path.join(os.path.dirname(md), path))
    if not os.path.abspath(dest).startswith(os.path.abspath(root) + os.sep):
        return f"{target} leaves the repository"
    if not os.path.exists(dest):
        return f"{target}: {os.path.relpath(dest, root)} does not exist"
    if anchor and dest.endswith(".md"):
        if anchor not in anchors(dest):
            return f"{target}: no heading with anchor #{anchor} in {os.path.relpath(dest, root)}"
    return None


def command_paths(lang, body):
    """(line offset, token) for each token of a command block that names a repo path."""
    prompts = lang == "console" and any(l.lstrip().startswith("$ ") for l in body)
    written = set()  # what an earlier command of the block writes may be named by a later one
    for k, line in enumerate(body):
        if prompts:
            if not line.lstrip().startswith("$ "):
                continue  # a console block's output lines
            line = line.lstrip()[2:]
        line = re.sub(r"(^|\s)#.*", "", line)  # a comment
        tokens = re.split(r"[\s;|&()]+", line)
        for j, tok in enumerate(tokens):
            tok = tok.strip("'\"`,")
            if j > 0 and tokens[j - 1] in OUTPUT_FLAGS:
                written.add(tok)
                continue
            if "=" in tok:
                flag, _, tok = tok.partition("=")
                if flag in OUTPUT_FLAGS:
                    written.add(tok)
                    continue
            if tok in written:
                continue
            if not tok.startswith(REPO_PREFIXES) or re.search(r"[*?<>${}\[\]]", tok):
                continue
            yield k, tok.rstrip("/.:")


def markdown_files(root):
    files = [os.path.join(root, "README.md")]
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, "docs")):
        dirnames.sort()
        files += [os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".md")]
    return files


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    broken, links, paths = [], 0, 0
    files = markdown_files(root)
    for md in files:
        rel = os.path.relpath(md, root)
        with open(md, encoding="utf-8") as f:
            text = f.read()
        prose, blocks = split_fences(text)
        targets = [(m.start(3), m.group(3)) for m in LINK.finditer(prose)]
        targets += [(m.start(1), m.group(1)) for m in REF_DEF.finditer(prose)]
        for offset, target in targets:
            links += 1
            reason = check_link(root, md, target)
            if reason:
                broken.append(f"{rel}:{prose.count(chr(10), 0, offset) + 1}: broken link {reason}")
        for first, lang, body in blocks:
            if lang not in COMMAND_LANGS:
                continue
            for k, tok in command_paths(lang, body):
                paths += 1
                if not os.path.exists(os.path.join(root, tok)):
                    broken.append(f"{rel}:{first + k}: command block names {tok}, which does not exist")
        if rel == "README.md":
            n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            if n > README_MAX_LINES:
                broken.append(f"README.md:{n}: {n} lines, more than {README_MAX_LINES}")
    for b in broken:
        print(b)
    print(f"test_docs: {len(files)} files, {links} links, {paths} command-block paths; {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
