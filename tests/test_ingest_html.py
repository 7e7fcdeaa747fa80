"""Main-content quality of the HTML extractor on real saved documentation pages.

The pages in tests/data/html (sources and licences in its README) come from
four different generators: Sphinx (Python), the Node.js API docs, mdBook (the
Rust book) and the npm docs (no ``<main>`` element at all). The ground truth
is the text of each page's main-content element; see bench/html_quality.py,
which also prints the figures. The extractor that read whole pages (stdlib
HTMLParser) scored precision 0.93 / 0.85 / 0.99 / 0.98 on them: navigation,
sidebars and footers were stored as if they were content.
"""

from __future__ import annotations

import pytest

from bench.html_quality import DATA, PAGES, score, score_page, truth_words
from sentient_core.ingest import extract_bytes, tokenize


@pytest.mark.parametrize("name", sorted(PAGES))
def test_main_content_precision_and_recall(name):
    result = score_page((DATA / name).read_bytes(), PAGES[name])
    assert result["truth"] > 1000  # a real page, not an empty selector
    assert result["precision"] >= 0.97, result
    assert result["recall"] >= 0.97, result


def test_navigation_and_footer_words_are_not_stored():
    data = (DATA / "python-tutorial-introduction.html").read_bytes()
    text = extract_bytes("intro.html", data)
    assert text.startswith("3. An Informal Introduction to Python")
    for furniture in ("Table of Contents", "Previous topic", "Report a Bug", "Show Source"):
        assert furniture not in text
    assert "Copyright" not in text
    words = tokenize(text)
    assert "calculator" in words and "fibonacci" in words


def test_score_is_a_multiset_comparison():
    assert score(["a", "a", "b"], ["a", "b", "b", "c"]) == (2 / 3, 2 / 4)
    assert score([], ["a"]) == (0.0, 0.0)
    words = truth_words(b"<main><p>one two</p><script>x y</script><p>three</p></main>", "//main")
    assert words == ["one", "two", "three"]


def test_paragraph_marks_as_the_regex_passes_made_them():
    """_Paragraphs (marks as calls, line by line) equals the four regex passes over the
    text with marks in it that it replaced."""
    import random
    import re

    from sentient_core.ingest import html_text as h

    para, line = "\ufdd0", "\ufdd1"
    passes = [
        (re.compile(r"\s+"), " "),
        (re.compile(f" ?([{para}{line}]) ?"), r"\1"),
        (re.compile(f"{line}*{para}[{para}{line}]*"), "\n\n"),
        (re.compile(f"{line}+"), "\n"),
    ]

    def by_regex(text: str) -> str:
        for rx, rep in passes:
            text = rx.sub(rep, text)
        return text.strip()

    pieces = [" ", "  ", "\t", "\n", "\xa0", "\u3000", "\x1c", "\u2028", "a", "é", "x y", "日本"]
    rng = random.Random(0)
    for _ in range(20_000):
        out, marked = h._Paragraphs(), []
        for _ in range(rng.randint(0, 12)):
            kind = rng.random()
            if kind < 0.15:
                out.paragraph()
                marked.append(para)
            elif kind < 0.25:
                out.line()
                marked.append(line)
            elif kind < 0.35:  # inside <pre>: newlines are line marks
                text = "".join(rng.choice(pieces) for _ in range(3))
                out.add_pre(text)
                marked.append(text.replace("\n", line))
            else:
                text = rng.choice(pieces)
                out.add(text)
                marked.append(text)
        assert out.text() == by_regex("".join(marked)), repr(marked)
