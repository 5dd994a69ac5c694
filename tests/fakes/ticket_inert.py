#!/usr/bin/env python3
"""Checks that a ticket body keeps untrusted text inert (README "Tickets").

  ticket_inert.py md|jira FILE    (FILE holds the body as bytes)

md: valid UTF-8; outside fenced blocks and code spans no raw "<" (but
soak's own "<!-- soak-... -->" marker lines) and no raw "@"; every fence is
closed by a line of its own character at least as long as the opener, and
no fenced block holds such a line (it would have closed early).
jira: valid UTF-8; {noformat} delimiters come in pairs on lines of their
own and none hides inside a line (the text cannot close a block early);
outside blocks no markdown (fences, "#" headings, HTML comments).  What
the escaped text looks like is checked by the caller.
Prints "ok" or the first problem and exits 1.
"""
import re, sys


def fail(msg):
    print(msg)
    sys.exit(1)


def check_md(text):
    fence = None
    for ln in text.split("\n"):
        if fence is None and re.fullmatch(r"<!-- soak-[a-z]+: [A-Za-z0-9._:-]* -->", ln):
            continue    # soak's own markers
        m = re.match(r"^ {0,3}(~{3,}|`{3,})", ln)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if re.fullmatch(r" {0,3}" + re.escape(fence[0]) + "{%d,}\\s*" % len(fence), ln):
                fence = None
            continue
        # Outside fences: drop code spans (a run of n backticks to the
        # next run of exactly n), then look for raw "<" and "@".
        out, j = [], 0
        while j < len(ln):
            if ln[j] == "`":
                n = len(re.match(r"`+", ln[j:]).group(0))
                m2 = re.search(r"(?<!`)`{%d}(?!`)" % n, ln[j + n:])
                if m2 is None:
                    fail("unclosed code span: " + ln)
                j += n + m2.end()
                continue
            out.append(ln[j])
            j += 1
        rest = "".join(out)
        for ch in "<@":
            if ch in rest:
                fail("raw %r outside code: %s" % (ch, ln))
        if re.search(r"\]\(", rest) or "![" in rest:
            fail("a markdown link outside code: " + ln)
    if fence is not None:
        fail("fence %s never closed" % fence)


def check_jira(text):
    n = 0
    inside = False
    for ln in text.split("\n"):
        if ln == "{noformat}":
            inside = not inside
            n += 1
            continue
        if "{noformat}" in ln.lower():
            fail("a {noformat} inside a line: " + ln)
        if not inside and ("<!--" in ln or re.match(r"^#{1,6} ", ln) or ln.startswith("~~~")):
            fail("markdown in a Jira body: " + ln)
    if inside or n % 2:
        fail("unbalanced {noformat}")


def main():
    kind, path = sys.argv[1], sys.argv[2]
    raw = open(path, "rb").read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        fail("not UTF-8: %s" % e)
    if kind == "md":
        check_md(text)
    else:
        check_jira(text)
    print("ok")


main()
