#!/usr/bin/env bash
# Every relative link of the Markdown files (README.md, docs/, and those of
# examples/, deploy/, bench/) resolves: the file is in the
# repository, and a #section of a Markdown file is one of its headings
# (GitHub's anchors: lower case, punctuation dropped, spaces to '-').
# Links to the web are not fetched.  And every section the source names
# (docs/design.md, "Verdicts"; docs/faults.md "Schedules") is there.
# Seconds.
set -euo pipefail
cd "${SOAK_ROOT:-$(dirname "$0")/../..}"
exec python3 - $(find . -name '*.md' -not -path './build*' -not -path './.git/*' -not -path '*/node_modules/*' | sed 's|^\./||' | sort) <<'PY'
import os, re, sys

def anchors(path, cache={}):
    if path not in cache:
        seen, out = {}, set()
        fence = False
        for line in open(path, encoding="utf-8"):
            if line.startswith("```"):
                fence = not fence
            if fence:
                continue
            m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            text = re.sub(r"`|\*\*|\*|_(?=\w)|(?<=\w)_|\[|\]\([^)]*\)|\]", "", m.group(2))
            slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else "%s-%d" % (slug, n))
        for m in re.finditer(r'<a (?:name|id)="([^"]+)"', open(path, encoding="utf-8").read()):
            out.add(m.group(1))
        cache[path] = out
    return cache[path]

bad = 0
link = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|^\[[^\]]+\]:\s*(\S+)", re.M)
for md in sys.argv[1:]:
    text = open(md, encoding="utf-8").read()
    # Not inside code: fenced blocks and `spans` are shown, not followed.
    text = re.sub(r"(?ms)^```.*?^```", lambda m: "\n" * m.group(0).count("\n"), text)
    text = re.sub(r"`[^`\n]*`", "", text)
    for m in link.finditer(text):
        target = m.group(1) or m.group(2)
        line = text.count("\n", 0, m.start()) + 1
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue                    # https:, mailto:: the web's
        path, _, frag = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
        if not os.path.exists(dest):
            print("%s:%d: %s: no such file (%s)" % (md, line, target, dest))
            bad = 1
        elif frag and dest.endswith(".md") and frag not in anchors(dest):
            print("%s:%d: %s: %s has no section #%s" % (md, line, target, dest, frag))
            bad = 1
# The source's words for a section: docs/FILE.md "Section" (or README
# "Section"), in comments, possibly across a line break: a heading of that
# file, or the start of one ("Schedules"), a bold run-in ("**Value types.**")
# or a field it documents (`timing`).
def named(path, name, cache={}):
    if path not in cache:
        heads, text = [], open(path, encoding="utf-8").read()
        fence = False
        for line in text.split("\n"):
            if line.startswith("```"):
                fence = not fence
            m = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
            if m and not fence:
                heads.append(m.group(1).replace("`", ""))
        cache[path] = (heads, text)
    heads, text = cache[path]
    return any(h == name or h.startswith(name) for h in heads) or \
        ("**%s.**" % name) in text or ("**%s**" % name) in text or \
        ("`%s`" % name) in text
nref = 0
ref = re.compile(r'(docs/[a-z_]+\.md|README(?:\.md)?),? "([^"]+)"(?:(?:,| and) "([^"]+)")?')
for top in ("common", "isolation", "invariants", "fault-proxy", "worker",
            "coordinator", "cmd", "tests", "bench", "deploy", "examples"):
    for dirpath, _, files in os.walk(top):
        for f in files:
            if not re.search(r"\.(c|h|sh|yaml|md)$", f):
                continue
            path = os.path.join(dirpath, f)
            if path.startswith("tests/lint/") or path.startswith("bench/"):
                continue        # bench/ cites bench/README.md's own sections
            text = open(path, encoding="utf-8", errors="replace").read()
            flat = re.sub(r"\s*\n\s*(?:\*|#)?\s*", " ", text)
            for m in ref.finditer(flat):
                doc = "README.md" if m.group(1).startswith("README") else m.group(1)
                for name in filter(None, m.groups()[1:]):
                    nref += 1
                    if not named(doc, name):
                        print('%s: %s "%s": no such section there' % (path, doc, name))
                        bad = 1
if bad:
    sys.exit(1)
print("docs links: ok (%d files, %d sections named by the source)" % (len(sys.argv) - 1, nref))
PY
