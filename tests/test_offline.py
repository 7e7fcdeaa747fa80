"""Offline answerer: extractive answers with sources from the Python docs and the
incoming dir, refresh, threshold, determinism, passages and extractive summaries."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentient_core.encoder import get_encoder
from sentient_core.learning.offline import (
    PASSAGE_CHARS,
    CorpusAnswerer,
    passage_spans,
    split_passages,
    split_sentences,
    summarize_extractive,
)
from sentient_core.pydocs import documents as pydoc_documents
from sentient_core.vocab import Source

QUOKKA = (
    "The quokkaflux resonator calibrates the brindlewave sensor array every morning.\n\n"
    "Calibration of the quokkaflux resonator takes twelve minutes and needs a cold start."
)
QUOKKA_Q = "How is the quokkaflux resonator calibrated?"


@pytest.fixture(scope="module")
def docs_answerer():
    return CorpusAnswerer([], include_python_docs=True)


def test_answers_a_python_question_from_the_shipped_docs(docs_answerer):
    ans = docs_answerer.answer("How does the with statement use a context manager?")
    assert ans.text
    assert len(ans.sources) == len(ans.scores) == len(ans.passages) <= 3
    assert ans.text == "\n\n".join(
        f"{h}\n{p}" if h else p for h, p in zip(ans.headings, ans.passages, strict=True)
    )
    assert all(s.kind == "corpus" and s.ref.startswith("pydoc:") for s in ans.sources)
    assert "context manager" in ans.passages[0]
    assert "__enter__" in ans.text or "__exit__" in ans.text
    assert list(ans.scores) == sorted(ans.scores, reverse=True)
    assert min(ans.scores) >= 0.12
    assert all(len(p) <= PASSAGE_CHARS for p in ans.passages)


def test_module_docstrings_are_indexed_too(docs_answerer):
    ans = docs_answerer.answer("How do I decode JSON text into Python objects?")
    assert Source("corpus", "pydoc:module:json") in ans.sources


def test_nothing_above_threshold_gives_an_empty_answer(docs_answerer):
    for q in ("zxqvbl florbix quuxnarf", "", "the and of to", "!!!"):
        ans = docs_answerer.answer(q)
        assert ans.text == "" and ans.sources == () and ans.scores == ()
    strict = docs_answerer.answer("How does the with statement work?", min_score=0.99)
    assert strict.text == "" and strict.sources == ()


def test_answers_are_deterministic_and_independent_of_the_docs_cache(docs_answerer):
    # A custom encoder with the same settings builds its docs index from scratch.
    fresh = CorpusAnswerer([], encoder=get_encoder("token", code_dim=1024))
    for q in ("What does the global statement do?", "How are exceptions raised?"):
        a, b, c = docs_answerer.answer(q), docs_answerer.answer(q), fresh.answer(q)
        assert a == b == c
        assert a.text


def test_a_file_dropped_in_incoming_becomes_answerable_after_refresh(tmp_path):
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    ans = CorpusAnswerer([incoming], include_python_docs=False)
    assert ans.answer(QUOKKA_Q).text == ""
    path = incoming / "notes.md"
    path.write_text(QUOKKA)
    assert ans.answer(QUOKKA_Q).text == ""  # not before refresh
    assert ans.refresh() == 1
    got = ans.answer(QUOKKA_Q)
    assert "quokkaflux resonator" in got.text
    assert set(got.sources) == {Source("local", str(path))}
    assert ans.stats.files == 1
    assert ans.refresh() == 0  # unchanged files are not read again
    # A change is picked up; a deletion removes the passages.
    path.write_text(QUOKKA + "\n\nThe brindlewave sensor also hums at dusk, loudly.")
    assert ans.refresh() == 1
    assert "hums at dusk" in ans.answer("When does the brindlewave sensor hum?").text
    path.unlink()
    ans.refresh()
    assert ans.answer(QUOKKA_Q).text == "" and len(ans) == 0


def test_every_format_is_indexed_and_bad_files_are_skipped(tmp_path):
    from tests.pdfgen import text_pdf

    (tmp_path / "a.txt").write_text("Zorbulent gardens grow purple zorbulent moss in winter.")
    (tmp_path / "b.json").write_text('{"note": "Velmoric engines burn velmoric salt slowly."}')
    (tmp_path / "c.html").write_text("<html><body><p>Trastic owls nest in trastic caves.</p>")
    (tmp_path / "d.pdf").write_bytes(text_pdf([["Glimmerant tides rise under glimmerant moons."]]))
    (tmp_path / "bad.pdf").write_bytes(b"not a pdf at all")
    (tmp_path / "bin.txt").write_bytes(b"\x00\x01\x02" * 100)
    (tmp_path / "empty.md").write_bytes(b"")
    (tmp_path / "skip.exe").write_bytes(b"MZ")
    ans = CorpusAnswerer([tmp_path], include_python_docs=False)
    for word, name in [
        ("zorbulent moss", "a.txt"),
        ("velmoric salt", "b.json"),
        ("trastic owls", "c.html"),
        ("glimmerant tides", "d.pdf"),
    ]:
        got = ans.answer(f"What about {word}?")
        assert got.sources == (Source("local", str(tmp_path / name)),), word
    skipped = dict(ans.skipped)
    assert set(skipped) == {
        str(tmp_path / n) for n in ("bad.pdf", "bin.txt", "empty.md", "skip.exe")
    }
    assert "PDF" in skipped[str(tmp_path / "bad.pdf")]
    assert ans.stats.files == 4 and ans.stats.skipped == 4


def test_symlinks_out_of_the_incoming_dir_are_not_read(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("The vault password of the quokkaflux resonator is hunter2.")
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    os.symlink(outside, incoming / "link.txt")
    ans = CorpusAnswerer([incoming], include_python_docs=False)
    assert ans.answer("vault password quokkaflux resonator").text == ""
    assert [p for p, _ in ans.skipped] == [str(incoming / "link.txt")]


def test_missing_folder_is_empty_until_it_appears(tmp_path):
    incoming = tmp_path / "later"
    ans = CorpusAnswerer([incoming], include_python_docs=False)
    assert len(ans) == 0 and ans.skipped == []
    incoming.mkdir()
    (incoming / "q.txt").write_text(QUOKKA)
    ans.refresh()
    assert ans.answer(QUOKKA_Q).text


def test_passage_cap_bounds_the_index(tmp_path):
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text(f"Paragraph {i} about zephyrine kites.\n\n" * 3)
    ans = CorpusAnswerer([tmp_path], include_python_docs=False, max_passages=2)
    assert ans.stats.files == 2
    assert len(ans) <= 2
    assert sum("index full" in why for _, why in ans.skipped) == 3


def test_python_docs_are_read_without_importing_modules():
    code = (
        "import json, sys\n"
        "from sentient_core.pydocs import documents\n"
        "before = set(sys.modules)\n"
        "docs = documents()\n"
        "refs = [d.ref for d in docs]\n"
        "new = sorted(set(sys.modules) - before)\n"
        "python = [m for m in new if (getattr(sys.modules[m], '__file__', None) or '').endswith('.py')]\n"
        "print(json.dumps([refs, python]))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    refs, python_modules = json.loads(out)
    assert len(refs) > 100
    assert "pydoc:topic:with" in refs and "pydoc:module:smtplib" in refs
    # Of Python-source modules only the topics module is imported: docstrings of
    # modules written in Python come from their source files, never by import.
    assert set(python_modules) <= {"pydoc_data", "pydoc_data.topics"}


def test_python_doc_documents_are_unique_and_sorted():
    docs = pydoc_documents()
    refs = [d.ref for d in docs]
    texts = [d.text for d in docs]
    assert len(set(texts)) == len(texts)
    topics = [r for r in refs if r.startswith("pydoc:topic:")]
    modules = [r for r in refs if r.startswith("pydoc:module:")]
    assert topics == sorted(topics) and modules == sorted(modules)
    assert refs == topics + modules


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet="abc xyz.!?\n", max_size=300),
            st.text(alphabet="q", min_size=1, max_size=900),  # a long word without spaces
        ),
        max_size=8,
    ),
    st.integers(min_value=20, max_value=700),
)
def test_split_passages_keeps_every_word_within_the_limit(parts, max_chars):
    text = "\n\n".join(parts)
    passages = split_passages(text, max_chars)
    assert all(0 < len(p) <= max_chars for p in passages)
    # Words come back in order; a word longer than the limit is cut but not lost.
    assert "".join("".join(p.split()) for p in passages) == "".join(text.split())


def test_split_passages_packs_short_paragraphs_and_cuts_long_ones_at_sentences():
    text = "Short one.\n\nShort two.\n\n" + " ".join(f"Sentence number {i}." for i in range(60))
    passages = split_passages(text, 200)
    assert passages[0].startswith("Short one.\n\nShort two.")
    assert all(p.endswith(".") for p in passages)


def test_split_sentences():
    assert split_sentences("One. Two! Three? (Four.) Five\n\nSix") == [
        "One.",
        "Two!",
        "Three?",
        "(Four.)",
        "Five",
        "Six",
    ]


def test_extractive_summary_keeps_on_topic_sentences_in_order():
    sentences = [
        "Holographic memory stores each trace as a fixed-length code.",
        "The stock market closed higher on Tuesday.",
        "Recall in holographic memory ranks every stored code by cosine.",
        "A good code makes related traces score high in holographic memory.",
        "Bananas are rich in potassium.",
        "Holographic memory codes must discriminate unrelated traces.",
    ]
    text = " ".join(sentences)
    summary = summarize_extractive(text, max_sentences=3)
    picked = [s for s in sentences if s in summary]
    assert len(picked) == 3
    assert summary == " ".join(picked)  # verbatim, original order
    assert "stock market" not in summary and "Bananas" not in summary
    assert summarize_extractive(text, 3) == summary  # deterministic
    assert summarize_extractive("Just one sentence here.", 3) == "Just one sentence here."
    assert summarize_extractive("", 3) == ""
    with pytest.raises(ValueError):
        summarize_extractive(text, 0)


# ------------------------------------------------------------------ spans and ranks


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet="abc xyz.!?\n\t", max_size=300),
            st.text(alphabet="q", min_size=1, max_size=900),
        ),
        max_size=8,
    ),
    st.sampled_from(["\n\n", "\n \n", "\n\t\n\n"]),
    st.integers(min_value=20, max_value=700),
)
def test_passage_spans_are_exact_ordered_slices(parts, sep, max_chars):
    text = sep.join(parts)
    spans = passage_spans(text, max_chars)
    assert split_passages(text, max_chars) == [text[a:b] for a, b in spans]
    for a, b in spans:
        assert 0 <= a < b <= len(text) and b - a <= max_chars
        assert not text[a].isspace() and not text[b - 1].isspace()
    assert all(b <= a2 for (_, b), (a2, _) in itertools.pairwise(spans))
    # Nothing but whitespace is left out.
    covered = set()
    for a, b in spans:
        covered.update(range(a, b))
    assert all(text[i].isspace() for i in range(len(text)) if i not in covered)


def test_each_passage_is_its_documents_text_at_its_span(tmp_path, docs_answerer):
    from sentient_core.ingest import extract_bytes

    (tmp_path / "a.md").write_text(QUOKKA + "\n\n\n   The quokkaflux hums.  Twice!\n")
    (tmp_path / "b.html").write_text("<p>The quokkaflux resonator&nbsp;glows   blue.</p>")
    ans = CorpusAnswerer([tmp_path], include_python_docs=False, passage_chars=90)
    got = ans.answer("quokkaflux resonator", k=5, min_score=0.0)
    assert len(got.passages) == len(got.sources) == len(got.scores) == len(got.spans) >= 3
    for passage, source, (start, end) in zip(got.passages, got.sources, got.spans, strict=True):
        path = source.ref
        with open(path, "rb") as f:
            document = extract_bytes(path, f.read())
        assert document[start:end] == passage
    docs = {f"pydoc:{d.ref.split(':', 1)[1]}": d.text for d in pydoc_documents()}
    ans = docs_answerer.answer("How does the with statement use a context manager?", k=5)
    assert ans.spans
    for passage, source, (start, end) in zip(ans.passages, ans.sources, ans.spans, strict=True):
        assert docs[source.ref][start:end] == passage


def test_both_ranks_answer_and_a_bad_rank_is_refused(tmp_path):
    (tmp_path / "q.txt").write_text(QUOKKA)
    for rank in ("bm25", "hybrid"):
        ans = CorpusAnswerer([tmp_path], include_python_docs=False, rank=rank)
        got = ans.answer(QUOKKA_Q)
        assert "quokkaflux resonator" in got.passages[0]
        assert all(0.0 < s <= 1.0 for s in got.scores)
    with pytest.raises(ValueError, match="rank"):
        CorpusAnswerer([tmp_path], include_python_docs=False, rank="cosine")


# --------------------------------------------------------------------------- section context

DATA = os.path.join(os.path.dirname(__file__), "..", "bench", "data")


def _naive_headings(text: str, spans) -> list[str]:
    """Line by line: the last heading line / term line seen before each passage."""
    from sentient_core.learning.splitting import heading_spans, term_blocks

    heads = heading_spans(text)
    terms = term_blocks(text)
    out = []
    for start, _ in spans:
        before = [h for h in heads if h[0] <= start]
        lines, section = [], -1
        if before:
            a, b = before[-1]
            section = a
            if b <= start and a != start:
                lines.append(text[a:b].strip())
        inside = [t for t in terms if t[0] < start and t[1] <= start < t[2] and t[0] > section]
        if inside:
            lines.append(text[inside[-1][0] : inside[-1][1]])
        out.append("\n".join(lines))
    return out


def test_changelog_passages_carry_their_entrys_version_line():
    from sentient_core.learning.splitting import passage_headings, passage_spans

    text = Path(DATA, "debian", "corpus", "curl.changelog.txt").read_text()
    spans = passage_spans(text)
    heads = passage_headings(text, spans)
    assert heads == _naive_headings(text, spans)
    for (start, end), head in zip(spans, heads, strict=True):
        entry = text.rfind("\ncurl (", 0, start + 1)
        owner = text[entry + 1 : text.index("\n", entry + 1)] if entry >= 0 else ""
        if text[start:end].startswith(("curl (", "# ")):
            assert head == ""  # the passage holds its own heading
        else:
            assert head == owner
    # The passage about CVE-2024-11053 is shown under the version that fixed it.
    ans = CorpusAnswerer(
        [os.path.join(DATA, "debian", "corpus")], include_python_docs=False
    ).answer("Which version of the Debian curl package fixed CVE-2024-11053?", k=1)
    assert "CVE-2024-11053" in ans.passages[0]
    assert ans.headings[0] == "curl (7.88.1-10+deb12u10) bookworm; urgency=medium"
    assert ans.text.startswith(ans.headings[0] + "\n" + ans.passages[0])


def test_reference_passages_carry_their_title_and_term():
    from sentient_core.learning.splitting import passage_headings, passage_spans, term_blocks

    text = Path(DATA, "pydoc", "corpus", "debugger.txt").read_text()
    terms = [text[a:b] for a, b, _ in term_blocks(text)]
    assert {"w(here)", "r(eturn)", "pdb.pm()"} <= set(terms)
    # Sentences before a code block are not terms.
    assert not term_blocks("The simple form is equivalent to\n\n   if x:\n      y\n")
    assert not term_blocks("Examples:\n\n   x = 1\n")
    spans = passage_spans(text, 200)
    heads = passage_headings(text, spans)
    assert heads == _naive_headings(text, spans)
    where = text.index("Print a stack trace, with the most recent frame")
    (i,) = [i for i, (a, b) in enumerate(spans) if a <= where < b]
    # Either the passage holds its term line, or it is shown under it.
    assert "w(here)" in text[spans[i][0] : spans[i][1]] or heads[i].splitlines()[-1] == "w(here)"
    assert sum(h.splitlines()[-1] in terms for h in heads if h) >= 10
    # Markdown and underlined titles.
    md = "# Tides\n\nThe moon pulls the sea.\n\n## Springs\n\nSpring tides are high.\n"
    assert passage_headings(md, passage_spans(md, 30)) == ["", "# Tides", "", "## Springs"]
    rst = "Tides\n=====\n\nThe moon pulls.\n"
    assert passage_headings(rst, [(14, 29)]) == ["Tides"]


def test_query_words_no_passage_holds_do_not_lower_the_score(tmp_path):
    # A one-file corpus and a request padded with words it never uses: those
    # words can raise no passage's score, so they leave the normalisation too.
    (tmp_path / "python.txt").write_text(
        "Python was created by Guido van Rossum and first released in 1991. "
        "The history of the Python language began at CWI in the Netherlands."
    )
    ans = CorpusAnswerer([tmp_path], include_python_docs=False, rank="bm25")
    padded = ans.answer("Write a detailed essay of 400 words on the history of the Python language")
    plain = ans.answer("the history of the Python language")
    assert padded.passages and padded.passages == plain.passages
    assert padded.scores == pytest.approx(plain.scores)


# --------------------------------------------------------------------------- re-ranking

RERANK_CORPUS = {
    "a.txt": "Quokka release notes. The quokka parser was fixed. Quokka fixed the parser again; "
    "quokka parser fixes keep coming in every quokka release.",
    "b.txt": "quokka (1.2.3-1) unstable; urgency=high\n\n  * Fix CVE-2024-1234: heap overflow in "
    "the parser.\n\n -- Jane Roe <jane@example.org>  Mon, 02 Sep 2024 10:00:00 +0200",
    "c.txt": "The wallaby parser reads hopping schedules. Wallabies and quokkas are marsupials.",
    "d.txt": "quokka (1.2.2-1) unstable; urgency=low\n\n  * New upstream release of the parser.",
}
RERANK_QUESTIONS = (
    "Which version of quokka fixed CVE-2024-1234?",
    "On which date was the quokka parser overflow fixed?",
    "What does the wallaby parser read?",
    "Which quokka release fixed the parser?",
)


def test_reranking_orders_candidates_by_score_plus_the_judges_relevance(tmp_path):
    from sentient_core.learning.splitting import with_heading
    from sentient_core.relevance import TermStats, relevance

    for name, text in RERANK_CORPUS.items():
        (tmp_path / name).write_text(text)
    fast = CorpusAnswerer([tmp_path], include_python_docs=False)
    plain = CorpusAnswerer([tmp_path], include_python_docs=False, rerank=False)
    stats = TermStats(plain.passages)
    assert fast.term_stats().documents == stats.documents == len(plain.passages)
    for q in RERANK_QUESTIONS:
        # Naive: every candidate the plain ranking offers, re-sorted by hand (stable).
        cands = plain.answer(q, k=len(plain.passages), min_score=0.0)
        keyed = [
            (s + relevance(q, with_heading(h, p), stats), n, p)
            for n, (s, h, p) in enumerate(
                zip(cands.scores, cands.headings, cands.passages, strict=True)
            )
        ]
        want = [p for _, _, p in sorted(keyed, key=lambda t: (-t[0], t[1]))][:2]
        got = fast.answer(q, k=2, min_score=0.0)
        assert list(got.passages) == want
        # Scores stay the ranking's own (what min_score cuts), passage by passage.
        by_text = dict(zip(cands.passages, cands.scores, strict=True))
        assert list(got.scores) == [by_text[p] for p in got.passages]
        # The margin: the best key over the best key not given (the whole key if none).
        keys = sorted((t[0] for t in keyed), reverse=True)
        want_margin = keys[0] - (keys[2] if len(keys) > 2 else 0.0)
        assert got.margin == pytest.approx(want_margin, abs=1e-12)
        assert fast.answer(q, k=len(keys), min_score=0.0).margin == pytest.approx(keys[0])
    # The dated entry beats the passage that repeats "quokka parser fixed" (which the
    # plain ranking puts first): a date is what the question asks for.
    q = RERANK_QUESTIONS[1]
    assert "Quokka release notes" in plain.answer(q, k=1).passages[0]
    assert "Mon, 02 Sep 2024" in fast.answer(q, k=1).passages[0]


def test_reranking_lifts_top1_on_the_debian_set():
    from sentient_core.evaluation.qa import first_answer, load_qa
    from sentient_core.learning.splitting import with_heading

    items = load_qa(os.path.join(DATA, "debian", "qa.json"))
    corpus = os.path.join(DATA, "debian", "corpus")
    top1 = {}
    for rerank in (False, True):
        ans = CorpusAnswerer([corpus], include_python_docs=False, rerank=rerank)
        hits = 0
        for item in items:
            got = ans.answer(item.q, k=1)
            shown = [with_heading(h, p) for h, p in zip(got.headings, got.passages, strict=True)]
            hits += bool(shown) and first_answer(shown[0], item.answers) is not None
        top1[rerank] = hits / len(items)
    # Measured 0.86 → 0.95 (bench/offline_answers.py); the check: strictly better.
    assert top1[True] > top1[False] + 0.03, top1
