"""The deterministic disagreement detector on real passages (bench/data: Debian changelogs
and pydoc topics, not written here): precision and recall on the machine-labelled pairs
of bench/disagreement_eval.py, and the detector's contract on single passages."""

from __future__ import annotations

import math

import pytest

from bench.disagreement_eval import DATA, build_pairs, evaluate
from sentient_core.metamemory import detect_disagreement, from_disagreement

CURL = (DATA / "debian" / "corpus" / "curl.changelog.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def table():
    return evaluate(build_pairs())


def test_pairs_are_many_and_both_labels(table):
    assert table["all"]["pairs"] >= 1000
    assert table["all"]["tp"] + table["all"]["fn"] >= 400  # disagreements
    assert table["all"]["tn"] + table["all"]["fp"] >= 400  # agreements


def test_precision_and_recall_overall_and_held_out(table):
    # Measured 2026-11-30: all 0.996 / 0.855, heldout 1.000 / 0.796, heldout2 1.000 / 0.834.
    # A surprise event punishes a source: precision matters more than recall.
    assert table["all"]["precision"] >= 0.98
    assert table["all"]["recall"] >= 0.80
    for held in ("set:heldout", "set:heldout2"):
        assert table[held]["precision"] >= 0.98
        assert table[held]["recall"] >= 0.75
    # Agreements of the same facts in shifted windows never fire.
    assert table["type:shifted"]["fp"] == 0
    assert table["type:prose-right"]["fp"] == 0


def test_the_harder_sets_non_contradictions_do_not_fire(table):
    # Measured 2026-12-02 on debian/hard.json's pairs: before dates anchored as dates and
    # the asked change (added/removed) checked, hard 0.584 / 0.818 (32 false positives:
    # 8 another package's entry of the same year, 12 + 12 the entry that added a patch
    # against the one that dropped it); after, 1.000 / 0.655 ("applied upstream" read as a
    # removal: 0.972 / 0.636 without).
    assert table["type:date-other-package"]["pairs"] >= 30
    assert table["type:date-other-package"]["fp"] == 0
    assert table["type:negation-removed"]["fp"] == 0
    assert table["type:negation-added"]["fp"] == 0
    assert table["set:hard"]["precision"] >= 0.95
    # Changing the answer of a removal question is still a disagreement.
    assert table["type:negation-fabricated"]["recall"] >= 0.7


def test_a_date_anchors_as_a_date_and_the_asked_change_must_match():
    q = "Which version of the Debian curl package was uploaded on 10 Feb 2025?"
    curl = "curl (7.88.1-10+deb12u11) bookworm; urgency=medium\n\n  * Fix.\n\n -- A <a@debian.org>  Mon, 10 Feb 2025 10:00:00 +0100\n"
    gnutls = "gnutls28 (3.7.9-2+deb12u4) bookworm; urgency=medium\n\n  * Fix.\n\n -- B <b@debian.org>  Mon, 10 Feb 2025 09:00:00 +0100\n"
    # The same date, another package: not about the question.
    assert detect_disagreement(q, gnutls, curl) is None
    # A year alone is not an anchor: "2025" names hundreds of facts.
    other_upload = curl.replace("10 Feb", "11 Mar").replace("deb12u11", "deb12u12")
    assert detect_disagreement(q, other_upload, curl) is None
    dropped = "curl (7.80.0-1) unstable; urgency=medium\n\n  * Drop 12_x.patch, merged upstream.\n"
    added = "curl (7.74.0-1) unstable; urgency=medium\n\n  * 12_x.patch: needed for the tests.\n"
    # The entry that added it does not answer (nor contradict) which one dropped it.
    assert (
        detect_disagreement("Which version of curl dropped the patch 12_x.patch?", added, dropped)
        is None
    )
    assert (
        detect_disagreement("Which version of curl added the patch 12_x.patch?", dropped, added)
        is None
    )
    wrong = dropped.replace("7.80.0-1", "7.81.0-1")
    assert (
        detect_disagreement("Which version of curl dropped the patch 12_x.patch?", wrong, dropped)
        is not None
    )


def _entry_with_cve() -> tuple[str, str, str]:
    """The changelog entry of curl 7.88.1-10+deb12u11, which fixed CVE-2025-0167 (qa.json)."""
    ver, cve = "7.88.1-10+deb12u11", "CVE-2025-0167"
    start = CURL.index(f"curl ({ver})")
    end = CURL.index("\ncurl (", start + 1)
    assert cve in CURL[start:end]
    return CURL[start:end], ver, cve


def test_a_wrong_version_next_to_the_cve_is_a_disagreement_with_its_basis():
    chunk, ver, cve = _entry_with_cve()
    q = f"Which version of the Debian curl package fixed {cve}?"
    wrong = f"The Debian curl package fixed {cve} in version 7.88.1-10+deb12u99."
    found = detect_disagreement(q, wrong, chunk)
    assert found is not None
    assert found.expected == "7.88.1-10+deb12u99" and ver.endswith(found.actual)
    assert 0.0 < found.magnitude <= 1.0 and math.isfinite(found.magnitude)
    basis = found.basis()
    assert basis.rule.startswith("disagreement") and basis.inputs
    ev = from_disagreement(q, found, domain="curl", source="llm:127.0.0.1/m", time=1.7e9)
    assert ev.expected == found.expected and ev.magnitude == found.magnitude


def test_agreement_or_unrelated_text_is_not_a_disagreement():
    chunk, ver, cve = _entry_with_cve()
    q = f"Which version of the Debian curl package fixed {cve}?"
    assert detect_disagreement(q, f"curl fixed {cve} in version {ver}.", chunk) is None
    assert detect_disagreement(q, chunk, chunk) is None
    other = (DATA / "pydoc" / "corpus" / "assert.txt").read_text(encoding="utf-8")[:1500]
    assert detect_disagreement(q, other, chunk) is None
    assert detect_disagreement("", chunk, chunk) is None
