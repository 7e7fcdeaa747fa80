"""The harder Debian questions: several per package, made to tell learning from storage.

Generated from the same changelogs as the plain Debian set (``debian/corpus``),
by four templates chosen so that a passage that merely *mentions* the
question's words is often the wrong one:

negation (added / removed)
    A thing one entry adds and another removes (a build dependency, a test
    helper, Python 2 support): *which version of the Debian X package removed
    Y?* and *… added Y?* — both questions share every content word, only the
    verb differs, and each answer is the other question's distractor.
regression (first fix / fix of the fix)
    A CVE named in two entries, one of them a regression or follow-up of its
    fix: *which version first fixed CVE-Y?* and *which version fixed a
    regression of the fix for CVE-Y?*.
predecessor (confusable versions)
    *Which version of the Debian X package came directly before V?* — the
    answer is the next entry's header: the passage must hold the end of V's
    entry and the start of the one below it, and the versions differ in one
    character (``deb12u5`` / ``deb12u6``).
contents (what a version did)
    *Which CVE did version V of the Debian X package fix?* — the answers are
    the CVEs named only in V's entry; the question names a version, and its
    neighbours' entries name other CVEs in the same words.

Every item carries an ``anchor`` (a string that must lie within ``window``
characters of its answer, so one passage can hold both) for
:func:`build_qa.verify`.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

#: Verbs of a changelog bullet that adds or removes something.
_ADD = re.compile(
    r"^\s+[*+-] (?:add(?:ed)?|build-depend on|build again the \S+ extension using|"
    r"re-instate|reinstate|depend on|new)\b",
    re.I,
)
_REMOVE = re.compile(r"^\s+[*+-] (?:remove[ds]?|drop(?:ped|s)?|delete[ds]?)\b", re.I)
#: What is added or removed: a package name, a backquoted tool, or "Python2 support".
_THING = re.compile(
    r"`(?P<tick>[\w.+-]+)'|\b(?P<pkg>[a-z][a-z0-9.+]*-dev)\b|\b(?P<py>python ?2)\b", re.I
)

_HEADER = re.compile(r"^(?P<src>[a-z0-9][a-z0-9.+-]+) \((?P<ver>[^)\s]+)\) [^;]+; urgency=", re.M)
_CVE = re.compile(r"CVE-\d{4}-\d{4,7}")
_FIX_OF_FIX = re.compile(r"regression|follow-up", re.I)
_PATCH = re.compile(
    r"(?<![\w./-])(?:d/p/|debian/patches/)?(?P<name>[A-Za-z0-9][\w.+-]*\.(?:patch|diff))\b"
)
_DROPPED = re.compile(r"\b(?:drop(?:ped)?|remove[ds]?|merged upstream|applied upstream)\b", re.I)
_TRAILER = re.compile(r"^ -- .+?  \w{3}, (?P<date>\d{1,2} \w{3} \d{4}) \d\d:\d\d:\d\d", re.M)

PASSAGE_WINDOW = 1800
"""Anchor and answer of a predecessor question: within one chunk (2,000 characters)."""

PREDECESSORS_PER_PACKAGE = 4
CONTENTS_PER_PACKAGE = 4
DATES_PER_PACKAGE = 4


def _item(q: str, answers: list[str], name: str, anchor: str, kind: str) -> dict:
    """One question as :func:`build_qa.verify` reads it (``kind`` says which template)."""
    return {
        "q": q,
        "answers": answers,
        "source": name,
        "anchor": anchor,
        "window": PASSAGE_WINDOW,
        "kind": kind,
    }


def changelog_entries(text: str) -> list[tuple[str, str, int, int]]:
    """A changelog's entries as ``(source, version, start, end)`` character offsets, newest first."""
    heads = list(_HEADER.finditer(text))
    return [
        (
            m.group("src"),
            m.group("ver"),
            m.start(),
            heads[i + 1].start() if i + 1 < len(heads) else len(text),
        )
        for i, m in enumerate(heads)
    ]


def _entry_of(entries: list[tuple[str, str, int, int]], offset: int) -> int:
    return next(i for i, (_, _, a, b) in enumerate(entries) if a <= offset < b)


def _things(line: str) -> list[str]:
    out = []
    for m in _THING.finditer(line):
        thing = m.group("tick") or m.group("pkg") or m.group("py")
        out.append("Python 2 support" if m.group("py") else thing)
    return out


def negation_questions(src: str, name: str, text: str) -> list[dict]:
    """Added-vs-removed pairs of one changelog (both questions of each pair)."""
    entries = changelog_entries(text)
    added: dict[str, list[tuple[int, str]]] = {}
    removed: dict[str, list[tuple[int, str]]] = {}
    offset = 0
    for line in text.splitlines(keepends=True):
        book = added if _ADD.match(line) else removed if _REMOVE.match(line) else None
        if book is not None:
            for thing in _things(line):
                book.setdefault(thing.lower(), []).append(
                    (_entry_of(entries, offset), line.strip())
                )
        offset += len(line)
    items = []
    for key in sorted(set(added) & set(removed)):
        adds, removes = added[key], removed[key]
        if len({i for i, _ in adds}) != 1 or len({i for i, _ in removes}) != 1:
            continue  # added (or removed) twice: which one is meant is ambiguous
        thing = next(t for t in _things(adds[0][1] + " " + removes[0][1]) if t.lower() == key)
        for verb, (i, line) in (("added", adds[0]), ("removed", removes[0])):
            ver = entries[i][1]
            items.append(
                _item(
                    f"Which version of the Debian {src} package {verb} {thing}?",
                    [f"({ver})"],
                    name,
                    line,
                    "negation",
                )
            )
    return items


def patch_questions(src: str, name: str, text: str) -> list[dict]:
    """Patches one entry added and a later one dropped: *which version added / dropped P?*"""
    entries = changelog_entries(text)
    seen: dict[str, list[tuple[int, str]]] = {}
    offset = 0
    for line in text.splitlines(keepends=True):
        for m in _PATCH.finditer(line):
            i = _entry_of(entries, offset)
            near = offset + len(line) - entries[i][2] <= PASSAGE_WINDOW  # one passage holds both
            seen.setdefault(m.group("name"), []).append((i if near else -1, line.strip()))
        offset += len(line)
    items = []
    for patch, lines in seen.items():
        if any(i < 0 for i, _ in lines):
            continue  # a mention too far below its entry's header for one passage
        drops = {i for i, line in lines if _DROPPED.search(line)}
        oldest = max(i for i, _ in lines)  # newest entries come first
        if len(drops) != 1 or oldest in drops or min(drops) > oldest:
            continue
        dropped = drops.pop()
        first_line = next(line for i, line in lines if i == oldest)
        drop_line = next(line for i, line in lines if i == dropped)
        if _DROPPED.search(first_line):
            continue
        for verb, i, line in (("added", oldest, first_line), ("dropped", dropped, drop_line)):
            items.append(
                _item(
                    f"Which version of the Debian {src} package {verb} the patch {patch}?",
                    [f"({entries[i][1]})"],
                    name,
                    line,
                    "negation",
                )
            )
    return items


def date_questions(src: str, name: str, text: str) -> list[dict]:
    """*Which version was uploaded on D?* — dates share their month and year with neighbours."""
    items = []
    for _, ver, a, b in changelog_entries(text):
        if len(items) >= DATES_PER_PACKAGE:
            break
        m = _TRAILER.search(text, a, b)
        if m is None or text.count(m.group("date")) != 1 or text.count(f"({ver})") != 1:
            continue
        if m.end() - a > PASSAGE_WINDOW:
            continue
        items.append(
            _item(
                f"Which version of the Debian {src} package was uploaded on {m.group('date')}?",
                [f"({ver})"],
                name,
                m.group("date"),
                "date",
            )
        )
    return items


def regression_questions(src: str, name: str, text: str) -> list[dict]:
    """CVEs named in exactly two entries, one of them fixing a regression of the other's fix."""
    entries = changelog_entries(text)
    where: dict[str, list[tuple[int, str]]] = {}
    for i, (_, _, a, b) in enumerate(entries):
        body = text[a:b]
        for m in _CVE.finditer(body):
            start = body.rfind("\n", 0, m.start()) + 1
            end = body.find("\n", m.end())
            where.setdefault(m.group(), []).append((i, body[start : end if end >= 0 else None]))
    items = []
    for cve, seen in where.items():
        at = sorted({i for i, _ in seen})
        if len(at) != 2:
            continue
        follow = [i for i, line in seen if _FIX_OF_FIX.search(line)]
        if len(set(follow)) != 1:
            continue
        later = follow[0]
        first = next(i for i in at if i != later)
        if first < later:  # newest first: the regression fix must come after (above) the fix
            continue
        items.append(
            _item(
                f"Which version of the Debian {src} package first fixed {cve}?",
                [f"({entries[first][1]})"],
                name,
                cve,
                "regression",
            )
        )
        items.append(
            _item(
                f"Which version of the Debian {src} package fixed a regression of the fix for {cve}?",
                [f"({entries[later][1]})"],
                name,
                cve,
                "regression",
            )
        )
    return items


def predecessor_questions(src: str, name: str, text: str) -> list[dict]:
    """*Which version came directly before V?* for the newest entries whose successor fits one chunk."""
    entries = changelog_entries(text)
    items = []
    for (_, ver, a, _), (_, prev, c, _) in itertools.pairwise(entries):
        if len(items) >= PREDECESSORS_PER_PACKAGE:
            break
        if c + len(prev) + 2 - a > PASSAGE_WINDOW or text.count(f"({ver})") != 1:
            continue
        items.append(
            _item(
                f"Which version of the Debian {src} package came directly before {ver}?",
                [f"({prev})"],
                name,
                f"({ver})",
                "predecessor",
            )
        )
    return items


def contents_questions(src: str, name: str, text: str) -> list[dict]:
    """*Which CVE did version V fix?* for entries naming CVEs no other entry names."""
    entries = changelog_entries(text)
    count: dict[str, int] = {}
    for _, _, a, b in entries:
        for cve in set(_CVE.findall(text[a:b])):
            count[cve] = count.get(cve, 0) + 1
    items = []
    for _, ver, a, b in entries:
        if len(items) >= CONTENTS_PER_PACKAGE:
            break
        own = [
            m.group()
            for m in _CVE.finditer(text, a, b)
            if count[m.group()] == 1 and m.end() - a <= PASSAGE_WINDOW
        ]
        own = list(dict.fromkeys(own))
        if not own or text.count(f"({ver})") != 1:
            continue
        items.append(
            _item(
                f"Which CVE did version {ver} of the Debian {src} package fix?",
                own,
                name,
                f"({ver})",
                "contents",
            )
        )
    return items


def hard_questions(corpus: Path) -> list[dict]:
    """Every harder question (before verification), in a fixed order."""
    items: list[dict] = []
    for path in sorted(corpus.glob("*.changelog.txt")):
        text = path.read_text(encoding="utf-8")
        entries = changelog_entries(text)
        if not entries:
            continue
        src = entries[0][0]
        for make in (
            negation_questions,
            patch_questions,
            regression_questions,
            predecessor_questions,
            contents_questions,
            date_questions,
        ):
            items.extend(make(src, path.name, text))
    return items
