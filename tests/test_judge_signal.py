"""The judge's signal with spread (issue 22, item 3) and domains that name a subject (item 6).

``relevance`` is the calibrated gate: the weighted share of the question's terms a
passage holds, so a one-subject question reads 1.00 on any passage naming the
subject twice. ``focus`` grades how much of the passage is about the question,
``substance`` how much it says beyond it; ``bench/relevance_spread.py`` measures
both on labelled passages.
"""

from __future__ import annotations

from sentient_core.evaluation.report import Spread
from sentient_core.metamemory.domain import domain_of, subject_terms
from sentient_core.relevance import THIN_TERMS, TermStats, focus, relevance, substance

Q = "What is known about curl?"
ABOUT = (
    "curl (7.88.1-10+deb12u5) bookworm-security; urgency=high\n"
    "  * curl: fix CVE-2023-46218, a cookie mixed case PSL bypass.\n"
    "  * curl: fix CVE-2023-46219, HSTS long file name clears contents.\n"
    "  * Rebuild curl against the updated OpenSSL."
)
MENTION = (
    "Build dependencies\n"
    "  * The test suite needs python3, perl, openssh-server and stunnel4.\n"
    "  * libcurl4-openssl-dev provides the headers; curl is only a runtime check.\n"
    "  * Drop the obsolete autopkgtest for nghttp2.\n"
    "  * curl is called once more by the smoke test."
)


def test_relevance_saturates_where_focus_grades():
    # Both name curl twice: the gate cannot tell them apart, focus can.
    assert relevance(Q, ABOUT) == relevance(Q, MENTION) == 1.0
    assert focus(Q, ABOUT) > focus(Q, MENTION)
    assert 0.0 < focus(Q, MENTION) < focus(Q, ABOUT) <= 1.0
    # The lead counts: the same text with its subject first reads higher.
    lead_first = "curl\n" + MENTION
    assert focus(Q, lead_first) > focus(Q, MENTION)
    assert focus("What is it?", ABOUT) == 0.0  # no content terms: nothing to grade
    stats = TermStats([ABOUT, MENTION, "unrelated text about tides"])
    assert focus(Q, ABOUT, stats) > focus(Q, MENTION, stats)


def test_substance_counts_what_the_passage_says_beyond_the_question():
    thin = "python3.11 (3.11.2-6+deb12u8) bookworm; urgency=medium * Non-maintainer upload."
    assert substance("What is known about python3.11 3.11.2-6+deb12u8?", thin) < THIN_TERMS
    assert substance(Q, ABOUT) >= THIN_TERMS
    assert substance(Q, "curl curl curl") == 0


def test_a_spread_reports_quartiles():
    s = Spread.of([0.5, 1.0, 0.75, 0.25])
    assert s is not None and (s.n, s.min, s.median, s.max) == (4, 0.25, 0.625, 1.0)
    assert (s.q1, s.q3) == (0.4375, 0.8125)
    assert Spread.of([]) is None
    assert s.line() == "0.25 / 0.44 / 0.62 / 0.81 / 1.00 (n 4)"


def test_domains_never_come_from_template_words_months_or_adverbs():
    # A learn run on the harder Debian set had domains "jul", "feb", "drop" and "direct".
    stats = TermStats(
        [
            "curl (7.88.1-10+deb12u14) bookworm; urgency=medium -- Mon, 19 Jul 2025",
            "gnutls28 (3.7.9-2+deb12u4) bookworm; urgency=medium -- Mon, 10 Feb 2025",
            "curl: drop 12_use-python3-in-tests.patch, merged upstream",
            "expat (2.5.0-1) unstable; expat (2.4.9-1) unstable",
            *(f"debian package changelog entry {i}: refresh patch" for i in range(20)),
        ]
    )
    asked = {
        "Which version of the Debian curl package was uploaded on 19 Jul 2025?": "curl",
        "Which version of the Debian curl package dropped the patch x.patch?": "curl",
        "Which version of the Debian expat package came directly before 2.5.0-1?": "expat",
        "Which version of the Debian gnutls28 package was uploaded on 10 Feb 2025?": "gnutls28",
    }
    for question, want in asked.items():
        assert domain_of(question, None, stats) == want, question
        assert not {"jul", "feb", "drop", "direct", "came"} & set(subject_terms(question))
