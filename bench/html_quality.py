"""Main-content quality of HTML extraction on real saved pages.

For each page the ground truth is the text of the element that holds the
page's main content (``div[role=main]`` for Sphinx, ``#apicontent`` for the
Node.js API docs, ``main`` for mdBook, ``#_content`` for the npm docs). Both
texts are cut into words with :func:`sentient_core.ingest.tokenize` and compared
as multisets:

precision   share of extracted words that belong to the main text
recall      share of main-text words that were extracted

Run from a checkout (``PYTHONPATH`` selects which code is measured)::

    PYTHONPATH=. python bench/html_quality.py            # the pages in tests/data/html
    PYTHONPATH=. python bench/html_quality.py --python-docs /usr/share/doc/python3.11/html

``--python-docs`` adds every Sphinx page of an installed Python documentation
tree (Debian: ``apt-get install python3-doc``) under ``library/`` and
``tutorial/``, reported as one aggregate row.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import lxml.etree

from sentient_core.ingest import IngestError, extract_bytes, tokenize

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "html"

#: Saved page → XPath of its main-content element.
PAGES: dict[str, str] = {
    "python-tutorial-introduction.html": "//div[@role='main']",
    "nodejs-api-path.html": "//*[@id='apicontent']",
    "rust-book-ownership.html": "//main",
    "npm-install.html": "//*[@id='_content']",
}
SPHINX_MAIN = "//div[@role='main']"


def truth_words(data: bytes, xpath: str) -> list[str]:
    """Words of the ground-truth element (scripts and styles removed).

    Text nodes are joined with spaces, so adjacent cells or blocks do not glue
    their words together (``<th>Version</th><th>Changes</th>``).
    """
    doc = lxml.etree.fromstring(data, lxml.etree.HTMLParser(remove_comments=True))
    (main,) = doc.xpath(xpath)
    lxml.etree.strip_elements(main, "script", "style", "template", with_tail=False)
    return tokenize(" ".join(main.itertext()))


def score(extracted: list[str], truth: list[str]) -> tuple[float, float]:
    """(precision, recall) of ``extracted`` against ``truth``, as multisets."""
    common = sum((Counter(extracted) & Counter(truth)).values())
    precision = common / len(extracted) if extracted else 0.0
    recall = common / len(truth) if truth else 0.0
    return precision, recall


def score_page(data: bytes, xpath: str) -> dict:
    """Precision, recall and word counts of the extractor on one page."""
    truth = truth_words(data, xpath)
    try:
        words = tokenize(extract_bytes("page.html", data))
    except IngestError:
        words = []
    precision, recall = score(words, truth)
    return {
        "precision": precision,
        "recall": recall,
        "extracted": len(words),
        "truth": len(truth),
    }


def _python_docs(root: Path) -> dict:
    totals = Counter()
    pages = 0
    for path in sorted([*root.glob("library/*.html"), *root.glob("tutorial/*.html")]):
        data = path.read_bytes()
        try:
            truth = truth_words(data, SPHINX_MAIN)
        except ValueError:
            continue  # no single main element: not a content page
        try:
            words = tokenize(extract_bytes(path.name, data))
        except IngestError:
            words = []
        totals["common"] += sum((Counter(words) & Counter(truth)).values())
        totals["extracted"] += len(words)
        totals["truth"] += len(truth)
        pages += 1
    return {
        "pages": pages,
        "precision": totals["common"] / max(totals["extracted"], 1),
        "recall": totals["common"] / max(totals["truth"], 1),
        "extracted": totals["extracted"],
        "truth": totals["truth"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python-docs", type=Path, help="an installed Python HTML docs tree")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = {name: score_page((DATA / name).read_bytes(), xp) for name, xp in PAGES.items()}
    if args.python_docs is not None:
        rows[f"{args.python_docs} (all pages)"] = _python_docs(args.python_docs)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'page':<45} {'precision':>9} {'recall':>7} {'words out':>9} {'main words':>10}")
    for name, r in rows.items():
        print(
            f"{name:<45} {r['precision']:>9.3f} {r['recall']:>7.3f}"
            f" {r['extracted']:>9} {r['truth']:>10}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
