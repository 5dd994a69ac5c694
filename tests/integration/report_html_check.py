#!/usr/bin/python3
"""report.html read by a real HTML5 parser (Debian's python3-html5lib), as
a browser would build it: prints what tests/integration/report_html.sh
checks, as one JSON object.  Strict: a parse error fails.

  report_html_check.py FILE [--lenient]
"""
import base64
import hashlib
import json
import sys

import html5lib

path = sys.argv[1]
strict = "--lenient" not in sys.argv
with open(path, "rb") as f:
    data = f.read()
parser = html5lib.HTMLParser(tree=html5lib.getTreeBuilder("etree"), strict=strict,
                             namespaceHTMLElements=False)
doc = parser.parse(data)


def local(tag):
    return tag.split("}")[-1] if isinstance(tag, str) else ""


def text(e):
    return "".join(e.itertext())


els = list(doc.iter())
cls = lambda e: (e.get("class") or "").split()
grid = [e for e in els if local(e.tag) in ("a", "i") and "c" in cls(e)]
scripts = [e for e in els if local(e.tag) == "script"]
csp = [e.get("content") for e in els if local(e.tag) == "meta"
       and (e.get("http-equiv") or "").lower() == "content-security-policy"]
styles = [e for e in els if local(e.tag) == "style"]


def sha(s):
    return "sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()


facts = {
    "title": text(next(e for e in els if local(e.tag) == "title")),
    "cells": len(grid),
    "cells_linked": len([e for e in grid if local(e.tag) == "a"]),
    "cell_titles": [e.get("title") for e in grid[:5]],
    "sections": [e.get("id") for e in els if local(e.tag) == "section" and "fp" in cls(e)],
    "scripts": len(scripts),
    # every script and style is the page's own: its hash is in the policy
    "scripts_hashed": all(sha(text(s)) in (csp[0] if csp else "") for s in scripts),
    "styles_hashed": all(sha(text(s)) in (csp[0] if csp else "") for s in styles),
    "csp": csp[0] if csp else None,
    "imgs": len([e for e in els if local(e.tag) == "img"]),
    "on_attrs": sorted({k for e in els for k in e.keys() if k.lower().startswith("on")}),
    "style_attrs": len([e for e in els if e.get("style") is not None]),
    "iframes": len([e for e in els if local(e.tag) in ("iframe", "object", "embed")]),
    "swimlanes": len([e for e in els if local(e.tag) == "svg" and "swimlane" in cls(e)]),
    "schedules": len([e for e in els if local(e.tag) == "svg" and "sched" in cls(e)]),
    "lost_reply_marks": len([e for s in els if local(s.tag) == "svg" and "swimlane" in cls(s)
                             for e in s.iter() if "f-lost_reply" in cls(e)]),
    "waits": len([e for s in els if local(s.tag) == "svg" and "sched" in cls(s)
                  for e in s.iter() if "wait" in cls(e)]),
    "worker_bars": len([e for e in els if local(e.tag) == "rect" and
                        any(c.startswith("w-") for c in cls(e))]),
    "since": [(tr.get("class"), text(tr.findall("td")[1]).strip())
              for tr in els if local(tr.tag) == "tr" and tr.get("class") in
              ("new", "still", "fixed")],
    "flaky": [text(li).strip() for li in els if local(li.tag) == "li" and "flaky" in cls(li)],
    "td_texts": [text(e) for e in els if local(e.tag) == "td"][:200],
    "text": text(doc),
}
json.dump(facts, sys.stdout)
