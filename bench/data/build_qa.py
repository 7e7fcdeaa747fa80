"""Build (or check) the Q/A sets of ``sentient evaluate`` from material nobody here wrote.

Two sets, each a corpus folder and a ``qa.json`` next to it:

pydoc/
    ``corpus/<topic>.txt``: every ``pydoc_data.topics`` topic (the pages
    ``help()`` shows) of the Python that wrote them (CPython 3.11.7; pinned as
    files, since other Python versions ship other texts). The questions are
    hand-written in ``pydoc_questions.py``; each names the topic file it is about.
debian/
    ``corpus/<package>.changelog.txt`` and ``<package>.copyright.txt``: the
    Debian changelogs and copyright files of a few packages installed on the
    machine that built them (Debian 12 "bookworm", from
    ``/usr/share/doc/<binary package>/``). The questions are made from the
    changelogs by two templates: *which version of the Debian X package fixed
    CVE-Y?* (answer: the version as the entry header writes it, in parentheses,
    so ``(1.2-3)`` never matches inside ``(1.2-30)``) and *when was version V of
    X uploaded?* (the date of the entry's trailer line).

Every answer string is verified by machine (:func:`verify`):

* it occurs (case-insensitive, whitespace-normalised) in the file the question
  is about — otherwise the build FAILS (a question-writing error);
* it occurs in at most :data:`MAX_FILES` files of the set's corpus — otherwise
  it is too generic and is REJECTED (dropped; the count is reported); an entry
  left without answers is dropped too;
* for generated questions, the question's anchor (the CVE id or the version)
  and the answer lie within one :data:`WINDOW`-character window of the file
  (so one passage can hold both), and the anchor is unambiguous (a CVE named in
  exactly one changelog entry; the answer date once in the file).

Usage (from the repository root, with the package installed, e.g. ``make``'s venv)::

    python bench/data/build_qa.py            # write both qa.json files from the committed corpora
    python bench/data/build_qa.py --check    # verify, and fail if a qa.json differs from a rebuild
    python bench/data/build_qa.py --refresh-corpus   # re-copy the corpora from this machine first

The output is deterministic: the same corpus gives byte-identical qa.json files.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from sentient_core.errors import SentientError
from sentient_core.evaluation.qa import normalize

HERE = Path(__file__).resolve().parent

MAX_FILES = 3
"""An answer string found in more corpus files than this is too generic."""

WINDOW = 600
"""Anchor and answer of a generated question must fit in a window this long."""

#: Debian binary package (its /usr/share/doc folder) -> how many questions of each template.
DEBIAN_PACKAGES: dict[str, tuple[int, int]] = {
    "curl": (12, 3),
    "openssl": (6, 3),
    "python3.11": (10, 3),
    "libtiff6": (8, 2),
    "libxml2": (8, 2),
    "vim": (8, 2),
    "libexpat1": (6, 2),
    "git": (6, 2),
    "sqlite3": (5, 2),
    "libgnutls30": (6, 2),
}

_HEADER = re.compile(r"^(?P<src>[a-z0-9][a-z0-9.+-]+) \((?P<ver>[^)\s]+)\) [^;]+; urgency=", re.M)
_TRAILER = re.compile(r"^ -- .+?  \w{3}, (?P<date>\d{1,2} \w{3} \d{4}) \d\d:\d\d:\d\d", re.M)
_CVE = re.compile(r"CVE-\d{4}-\d{4,7}")
_NOT_A_FIX = re.compile(r"follow-up|not affect|revert|regression", re.I)


class BuildError(SentientError):
    """A question's answer is not where it should be (the build fails)."""


# ----------------------------------------------------------------------------- corpora


def refresh_pydoc(corpus: Path) -> None:
    """Write every pydoc topic of this Python as ``corpus/<topic>.txt``."""
    from pydoc_data.topics import topics

    corpus.mkdir(parents=True, exist_ok=True)
    for name, text in sorted(topics.items()):
        (corpus / f"{name}.txt").write_text(text.strip() + "\n", encoding="utf-8")


def refresh_debian(corpus: Path, doc_root: Path = Path("/usr/share/doc")) -> None:
    """Copy (decompressed) the changelog and copyright of each package in :data:`DEBIAN_PACKAGES`."""
    corpus.mkdir(parents=True, exist_ok=True)
    for pkg in DEBIAN_PACKAGES:
        folder = doc_root / pkg
        changelog = gzip.decompress((folder / "changelog.Debian.gz").read_bytes()).decode("utf-8")
        source = _HEADER.search(changelog)
        if source is None:
            raise BuildError(f"{folder}: no changelog entry header")
        name = source.group("src")
        (corpus / f"{name}.changelog.txt").write_text(changelog, encoding="utf-8")
        copyright_ = (folder / "copyright").read_text(encoding="utf-8")
        (corpus / f"{name}.copyright.txt").write_text(copyright_, encoding="utf-8")


# ----------------------------------------------------------------------------- questions


def debian_questions(corpus: Path) -> list[dict]:
    """The generated Debian questions (before verification), in a fixed order."""
    items: list[dict] = []
    for path in sorted(corpus.glob("*.changelog.txt")):
        text = path.read_text(encoding="utf-8")
        entries = _sibling("hard_questions").changelog_entries(text)
        src = entries[0][0]
        quota = _quota(src)
        if quota is None:
            continue
        n_cve, n_date = quota
        where: dict[str, list[int]] = {}
        for i, (_, _, a, b) in enumerate(entries):
            for cve in dict.fromkeys(_CVE.findall(text[a:b])):
                where.setdefault(cve, []).append(i)
        cves = 0
        for cve, at in where.items():  # file order: newest entries first
            if cves >= n_cve:
                break
            if len(at) != 1:
                continue  # named in two entries (a fix and a regression fix, say): ambiguous
            _, ver, a, b = entries[at[0]]
            i = text.index(cve, a, b)
            line = text[text.rfind("\n", a, i) + 1 : text.find("\n", i)]
            if _NOT_A_FIX.search(line):
                continue  # names the CVE without fixing it here
            if not _in_window(text, cve, f"({ver})"):
                continue  # a long entry: no passage-sized window holds both
            items.append(
                {
                    "q": f"Which version of the Debian {src} package fixed {cve}?",
                    "answers": [f"({ver})"],
                    "source": path.name,
                    "anchor": cve,
                }
            )
            cves += 1
        dates = 0
        for _, ver, a, b in entries:
            if dates >= n_date:
                break
            m = _TRAILER.search(text, a, b)
            if m is None or text.count(m.group("date")) != 1:
                continue
            if not _in_window(text, f"({ver})", m.group("date")):
                continue
            items.append(
                {
                    "q": f"On which date was version {ver} of the Debian {src} package uploaded?",
                    "answers": [m.group("date")],
                    "source": path.name,
                    "anchor": f"({ver})",
                }
            )
            dates += 1
    return items


def _quota(source: str) -> tuple[int, int] | None:
    names = {
        "curl": "curl",
        "openssl": "openssl",
        "python3.11": "python3.11",
        "tiff": "libtiff6",
        "libxml2": "libxml2",
        "vim": "vim",
        "expat": "libexpat1",
        "git": "git",
        "sqlite3": "sqlite3",
        "gnutls28": "libgnutls30",
    }
    pkg = names.get(source)
    return DEBIAN_PACKAGES.get(pkg) if pkg else None


def _sibling(name: str):
    """The module ``name``.py next to this file (this folder is not a package)."""
    spec = importlib.util.spec_from_file_location(f"_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pydoc_questions() -> list[dict]:
    """The hand-written Python-docs questions (``pydoc_questions.py``)."""
    return [
        {"q": q, "answers": list(answers), "source": f"{topic}.txt"}
        for topic, q, answers in _sibling("pydoc_questions").QUESTIONS
    ]


def hard_questions(corpus: Path) -> list[dict]:
    """The harder Debian questions (``hard_questions.py``)."""
    return _sibling("hard_questions").hard_questions(corpus)


# ----------------------------------------------------------------------------- verification


def _in_window(text: str, anchor: str, answer: str, window: int = WINDOW) -> bool:
    """Whether ``anchor`` and ``answer`` both lie inside some ``window``-character slice."""
    t, x, y = normalize(text), normalize(anchor), normalize(answer)
    xs = [m.start() for m in re.finditer(re.escape(x), t)]
    ys = [m.start() for m in re.finditer(re.escape(y), t)]
    return any(max(i + len(x), j + len(y)) - min(i, j) <= window for i in xs for j in ys)


def verify(corpus: Path, items: Sequence[dict]) -> tuple[list[dict], dict[str, int]]:
    """Check every answer string (see the module docstring).

    Returns
    -------
    kept : list of dict
        The entries as they go into qa.json (``q``, ``answers``, ``source``).
    counts : dict
        ``questions``, ``kept``, ``answers_rejected_generic``, ``questions_rejected``.

    Raises
    ------
    BuildError
        An answer is missing from its file, or an anchor check fails.
    """
    texts = {p.name: normalize(p.read_text(encoding="utf-8")) for p in sorted(corpus.iterdir())}
    kept: list[dict] = []
    generic = dropped = 0
    problems: list[str] = []
    for item in items:
        src = item["source"]
        if src not in texts:
            problems.append(f"{item['q']!r}: no corpus file {src}")
            continue
        answers = []
        for a in item["answers"]:
            key = normalize(a)
            if key not in texts[src]:
                problems.append(f"{item['q']!r}: answer {a!r} is not in {src}")
                continue
            if "anchor" in item:
                raw = (corpus / src).read_text(encoding="utf-8")
                window = item.get("window", WINDOW)
                if not _in_window(raw, item["anchor"], a, window):
                    problems.append(
                        f"{item['q']!r}: {a!r} is not within {window} chars of {item['anchor']!r}"
                    )
                    continue
            if sum(key in t for t in texts.values()) > MAX_FILES:
                generic += 1
                continue
            answers.append(a)
        if not answers:
            dropped += 1
            continue
        kept.append({"q": item["q"], "answers": answers, "source": src})
    if problems:
        raise BuildError(f"{corpus}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    counts = {
        "questions": len(items),
        "kept": len(kept),
        "answers_rejected_generic": generic,
        "questions_rejected": dropped,
    }
    return kept, counts


def build(root: Path = HERE) -> dict[Path, tuple[str, dict[str, int]]]:
    """Verify every set; ``{qa.json path: (its text, counts)}``."""
    debian = root / "debian" / "corpus"
    out = {}
    for corpus, qa, items in (
        (root / "pydoc" / "corpus", root / "pydoc" / "qa.json", pydoc_questions()),
        (debian, root / "debian" / "qa.json", debian_questions(debian)),
        (debian, root / "debian" / "hard.json", hard_questions(debian)),
    ):
        kept, counts = verify(corpus, items)
        out[qa] = (json.dumps(kept, indent=1, ensure_ascii=False) + "\n", counts)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="verify; fail if a qa.json is stale")
    p.add_argument("--refresh-corpus", action="store_true", help="re-copy the corpora first")
    args = p.parse_args(argv)
    if args.refresh_corpus:
        refresh_pydoc(HERE / "pydoc" / "corpus")
        refresh_debian(HERE / "debian" / "corpus")
    try:
        built = build()
    except BuildError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    stale = []
    for path, (text, counts) in built.items():
        name = path.relative_to(HERE)
        print(
            f"{name}: {counts['kept']} questions kept of {counts['questions']};"
            f" {counts['answers_rejected_generic']} answer string(s) rejected as generic"
            f" (in > {MAX_FILES} corpus files), {counts['questions_rejected']} question(s)"
            " left without answers"
        )
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"error: stale (rebuild with build_qa.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
