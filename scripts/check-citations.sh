#!/usr/bin/env bash
# Checks the format citations: every `X.md §N` (with lists and ranges such as `§4.3, §5`,
# `§4.2/§4.3`, `§9 – §10`, `§2–4`; also the Markdown form `[X.md](X.md) §N`) cited in crate/,
# www/src, scripts, proto, tests, docs and README.md must name a document docs/format/X.md that
# has a heading for §N (`## 4.1 …`, `### 4.1`, `## 4. …`). Lists every citation with its
# count, then fails if any is missing.
#   scripts/check-citations.sh            list all citations, then the problems
#   scripts/check-citations.sh --quiet    only the problems and the summary line
set -euo pipefail
cd "$(dirname "$0")/.."
quiet=0
[[ "${1:-}" == "--quiet" || "${1:-}" == "-q" ]] && quiet=1

# Tracked and new (not ignored) files only: never crate/target or node_modules. Outside a git
# checkout, fall back to find with the same exclusions.
list_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard -- crate www/src scripts proto tests docs README.md
  else
    find crate www/src scripts proto tests docs README.md \( -name target -o -name node_modules \) -prune \
      -o -type f -print0 2>/dev/null
  fi
}
list_files | QUIET=$quiet python3 -c '
import os, re, sys
from collections import Counter, defaultdict

NUM = r"[0-9]+(?:\.[0-9]+)*"
WS = r"(?:\s|//[/!]?|#|\*)*"   # spaces, also a line break inside a comment
SEP = WS + r"(?:,|/|–|—|-|and)" + WS
CITE = re.compile(r"\b([a-z][a-z0-9-]*)\.md\)?" + WS + r"§(" + NUM + r"(?:" + SEP + r"§?" + NUM + r")*)")
ITEM = re.compile(r"(–|—|-)?" + WS + r"§?(" + NUM + r")")

def expand(body):
    """Section numbers of one citation body; a range a–b with the same prefix is expanded."""
    out, prev = [], None
    pos = 0
    for m in ITEM.finditer(body):
        # Bare numbers are only accepted after a range dash; after ",", "/" or "and" a § is
        # required, so "pairing.md §4.3, 38 pairs" cites only §4.3.
        between = body[pos:m.start()]
        pos = m.end()
        num, dash = m.group(2), m.group(1)
        if prev is not None and not dash and "§" not in body[m.start():m.end()]:
            break
        if dash and prev is not None:
            a, b = prev.split("."), num.split(".")
            if len(b) == 1 and len(a) > 1:           # §3.3–5 means §3.3 … §3.5
                b = a[:-1] + b
            if len(a) == len(b) and a[:-1] == b[:-1] and int(a[-1]) < int(b[-1]) <= int(a[-1]) + 20:
                for k in range(int(a[-1]) + 1, int(b[-1]) + 1):
                    out.append(".".join(a[:-1] + [str(k)]))
                prev = ".".join(b)
                continue
            num = ".".join(b)
        out.append(num)
        prev = num
    return out

def headings(doc):
    path = os.path.join("docs", "format", doc + ".md")
    if not os.path.exists(path):
        return None
    secs = set()
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^#{1,6}\s+(" + NUM + r")\.?(?:\s|$)", line)
        if m:
            secs.add(m.group(1))
    return secs

files = [f for f in sys.stdin.read().split("\0") if f and os.path.isfile(f)]
count, where = Counter(), defaultdict(list)
for f in files:
    try:
        text = open(f, encoding="utf-8").read()
    except (UnicodeDecodeError, OSError):
        continue
    for m in CITE.finditer(text):
        ln = text.count("\n", 0, m.start()) + 1
        doc = m.group(1)
        for sec in expand(m.group(2)):
            count[(doc, sec)] += 1
            where[(doc, sec)].append(f"{f}:{ln}")

cache, problems = {}, []
def key(k):
    return (k[0], [int(x) for x in k[1].split(".")])
for doc, sec in sorted(count, key=key):
    if doc not in cache:
        cache[doc] = headings(doc)
    secs = cache[doc]
    if secs is None:
        status = f"MISSING docs/format/{doc}.md"
    elif sec not in secs:
        status = f"MISSING heading §{sec} in docs/format/{doc}.md"
    else:
        status = "ok"
    if not os.environ.get("QUIET") == "1":
        print(f"{count[(doc, sec)]:4d}  {doc}.md §{sec}  {status}")
    if status != "ok":
        problems.append((doc, sec, status))

for doc, sec, status in problems:
    print(f"error: {doc}.md §{sec}: {status}; cited at " + ", ".join(where[(doc, sec)][:5]))
n = sum(count.values())
print(f"check-citations: {n} citations of {len(count)} sections in {len(cache)} documents; {len(problems)} missing")
sys.exit(1 if problems else 0)
'
