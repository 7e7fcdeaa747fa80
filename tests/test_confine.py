"""Confined local reads: one path (sentient_core.confine) for the fetcher, the corpus
walker and the offline answerer; races, hard links, symlinks, ``..``, ``~``, loops.

The race tests run a swapper subprocess (tests/race_swapper.py) that swaps a
directory for a symlink to an outside directory, a deeper directory likewise,
a file for a symlink to an outside file and a file for a hard link to one, over
and over, while this process reads through the confined path. They are bounded
by iteration counts (100,000 reads; 300 answerer refreshes, 3,000 in the slow lane),
never by the clock.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sentient_core.confine import (
    MAX_SYMLINKS,
    ConfinedDir,
    ConfinementError,
    ConfinementFailed,
    ConfinementRefused,
)
from sentient_core.confine.walk import Walker
from sentient_core.errors import ArgumentError, SentientError
from sentient_core.ingest import iter_files
from sentient_core.learning.fetch import Fetcher, FetchError
from sentient_core.learning.offline import CorpusAnswerer
from sentient_core.learning.safety import CHECKS, Refusal, SafetyFilter, SafetyPolicy
from tests.race_swapper import INSIDE, MARKER, SECRET, SECRET_WORDS, Swapper, race_layout

# --------------------------------------------------------------------------- layout


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """incoming/ with every hostile entry; outside/ with the secrets."""
    inc = tmp_path / "incoming"
    out = tmp_path / "outside"
    (inc / "sub" / "deep").mkdir(parents=True)
    (out / "deep").mkdir(parents=True)
    (out / "secret.txt").write_bytes(SECRET)
    (out / "deep" / "secret.txt").write_bytes(SECRET)
    (inc / "a.txt").write_bytes(INSIDE)
    (inc / "sub" / "b.txt").write_bytes(INSIDE)
    (inc / "sub" / "deep" / "c.txt").write_bytes(INSIDE)
    os.link(out / "secret.txt", inc / "hard.txt")
    (inc / "abs-out.txt").symlink_to(out / "secret.txt")
    (inc / "rel-out.txt").symlink_to("../outside/secret.txt")
    (inc / "dir-out").symlink_to(out, target_is_directory=True)
    (inc / "sub" / "up-out").symlink_to("../../outside", target_is_directory=True)
    (inc / "chain1.txt").symlink_to("chain2.txt")
    (inc / "chain2.txt").symlink_to("sub/../../outside/secret.txt")
    (inc / "in-rel.txt").symlink_to("sub/b.txt")
    (inc / "in-abs.txt").symlink_to(inc / "sub" / "deep" / "c.txt")
    (inc / "sub" / "up-in.txt").symlink_to("../a.txt")
    (inc / "sub-link").symlink_to("sub", target_is_directory=True)
    (inc / "loop.txt").symlink_to("loop.txt")
    (inc / "la.txt").symlink_to("lb.txt")
    (inc / "lb.txt").symlink_to("la.txt")
    (inc / "dangling.txt").symlink_to("nowhere.txt")
    os.mkfifo(inc / "fifo.txt")
    return inc


def _read(root: ConfinedDir, rel: str) -> bytes:
    with root.open_file(rel) as f:
        return f.read(1 << 20)


REFUSED = [
    ("../outside/secret.txt", "outside"),
    ("sub/../../outside/secret.txt", "outside"),
    ("sub/deep/../../../outside/deep/secret.txt", "outside"),
    ("..", "outside"),
    ("abs-out.txt", "outside"),
    ("rel-out.txt", "outside"),
    ("dir-out/secret.txt", "outside"),
    ("dir-out/deep/secret.txt", "outside"),
    ("sub/up-out/secret.txt", "outside"),
    ("chain1.txt", "outside"),
    ("hard.txt", "hardlink"),
    ("loop.txt", "loop"),
    ("la.txt", "loop"),
    ("fifo.txt", "not_regular"),
    ("sub", "not_regular"),
    ("", "not_regular"),
    ("sub/..", "not_regular"),
]


@pytest.mark.parametrize(("rel", "kind"), REFUSED)
def test_confined_dir_refuses(tree: Path, rel: str, kind: str) -> None:
    root = ConfinedDir(tree)
    with pytest.raises(ConfinementRefused) as info:
        _read(root, rel)
    assert info.value.kind == kind, info.value.reason
    assert isinstance(info.value, SentientError) and info.value.reason


@pytest.mark.parametrize(
    ("rel", "where"),
    [
        ("a.txt", "a.txt"),
        ("sub/b.txt", "sub/b.txt"),
        ("sub/../a.txt", "a.txt"),
        ("./sub/./deep/c.txt", "sub/deep/c.txt"),
        ("in-rel.txt", "sub/b.txt"),
        ("in-abs.txt", "sub/deep/c.txt"),
        ("sub/up-in.txt", "a.txt"),
        ("sub-link/deep/c.txt", "sub/deep/c.txt"),
        ("sub-link/../a.txt", "a.txt"),
    ],
)
def test_confined_dir_reads_inside_and_reports_where(tree: Path, rel: str, where: str) -> None:
    root = ConfinedDir(tree)
    with root.open_file(rel) as f:
        assert f.read(100) == INSIDE
        assert f.path == str(tree / where)
        assert f.rel == tuple(where.split("/"))
        assert stat.S_ISREG(f.stat.st_mode)


def test_missing_and_not_a_directory_are_failures_not_refusals(tree: Path) -> None:
    root = ConfinedDir(tree)
    for rel in ("nope.txt", "sub/nope/x.txt", "a.txt/x", "dangling.txt"):
        with pytest.raises(ConfinementFailed) as info:
            _read(root, rel)
        assert info.value.kind == "missing", rel
    with pytest.raises(ConfinementFailed):
        ConfinedDir(tree / "no-such-dir").open_file("a.txt")


def test_symlinks_can_be_refused_altogether(tree: Path) -> None:
    root = ConfinedDir(tree, follow_symlinks=False)
    assert _read(root, "a.txt") == INSIDE
    for rel in ("in-rel.txt", "sub-link/b.txt"):
        with pytest.raises(ConfinementRefused) as info:
            _read(root, rel)
        assert info.value.kind == "symlink"


def test_hard_links_only_when_allowed(tree: Path) -> None:
    assert _read(ConfinedDir(tree, allow_hardlinks=True), "hard.txt") == SECRET


def test_a_name_added_and_removed_during_the_open_is_refused(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race the swap test found once in 100,000 reads, made deterministic: the
    # first fstat sees one name, a second name comes and goes before the names are
    # verified. Link count alone is 1 again; ctime shows the change.
    root = ConfinedDir(tree)
    resolve = Walker.resolve
    extra = tree.parent / "outside" / "extra-name"

    def resolve_then_relink(self, *args):  # type: ignore[no-untyped-def]
        res = resolve(self, *args)
        os.link(tree / "a.txt", extra)
        os.unlink(extra)
        return res

    monkeypatch.setattr(Walker, "resolve", resolve_then_relink)
    with pytest.raises(ConfinementRefused) as info:
        _read(root, "a.txt")
    assert info.value.kind == "changed"
    monkeypatch.undo()
    assert _read(root, "a.txt") == INSIDE


def test_symlink_chain_of_the_limit_is_followed_and_one_more_is_a_loop(tmp_path: Path) -> None:
    (tmp_path / "l0").write_bytes(INSIDE)
    for i in range(1, MAX_SYMLINKS + 2):
        (tmp_path / f"l{i}").symlink_to(f"l{i - 1}")
    root = ConfinedDir(tmp_path)
    assert _read(root, f"l{MAX_SYMLINKS}") == INSIDE
    with pytest.raises(ConfinementRefused) as info:
        _read(root, f"l{MAX_SYMLINKS + 1}")
    assert info.value.kind == "loop"


def test_bad_arguments(tree: Path) -> None:
    root = ConfinedDir(tree)
    for rel in ("/etc/passwd", "a\x00.txt", ("sub/b.txt",), ("a", None)):
        with pytest.raises(ArgumentError):
            root.open_file(rel)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError):
        ConfinedDir("")


def test_a_root_swapped_for_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "a.txt").write_bytes(SECRET)
    (tmp_path / "incoming").mkdir()
    (tmp_path / "incoming" / "a.txt").write_bytes(INSIDE)
    root = ConfinedDir(tmp_path / "incoming")
    assert _read(root, "a.txt") == INSIDE  # keeps a descriptor of the root
    os.rename(tmp_path / "incoming", tmp_path / "moved")
    (tmp_path / "incoming").symlink_to(tmp_path / "outside", target_is_directory=True)
    with pytest.raises(ConfinementRefused) as info:
        _read(root, "a.txt")
    assert info.value.kind == "changed"
    # Deleted and made again: the new dir is the root now.
    (tmp_path / "incoming").unlink()
    (tmp_path / "incoming").mkdir()
    (tmp_path / "incoming" / "a.txt").write_bytes(b"new\n")
    assert _read(root, "a.txt") == b"new\n"
    root.close()


def test_list_and_stat(tree: Path) -> None:
    root = ConfinedDir(tree)
    names = [n for n, _ in root.list_dir()]
    assert names == sorted(names) and "dir-out" in names and "sub" in names
    kinds = dict(root.list_dir())
    assert stat.S_ISLNK(kinds["dir-out"].st_mode)  # reported, not followed
    with pytest.raises(ConfinementRefused):
        root.list_dir("dir-out")
    assert root.stat("in-rel.txt")[0] == str(tree / "sub" / "b.txt")
    with pytest.raises(ConfinementRefused):
        root.stat("abs-out.txt")


def test_replace_file_never_writes_through_a_planted_symlink(tree: Path) -> None:
    outside = tree.parent / "outside" / "secret.txt"
    (tree / "planted.txt").symlink_to(outside)
    ConfinedDir(tree).replace_file("planted.txt", b"fresh\n")
    assert outside.read_bytes() == SECRET
    assert not (tree / "planted.txt").is_symlink()
    assert (tree / "planted.txt").read_bytes() == b"fresh\n"
    assert not [p for p in os.listdir(tree) if p.endswith(".part")]
    with pytest.raises(ArgumentError):
        ConfinedDir(tree).replace_file("../x.txt", b"")


def test_errors_pickle() -> None:
    import pickle

    err = ConfinementRefused("/x", "loop", "symlink loop at /x")
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), back.path, back.kind, back.reason) == (
        ConfinementRefused,
        "/x",
        "loop",
        "symlink loop at /x",
    )


# --------------------------------------------------------------------------- through the filter


def _policy(incoming: str | Path, **kw) -> SafetyPolicy:
    kw.setdefault("max_files_per_session", 10**9)
    kw.setdefault("rate_limit_requests", 10**9)
    return SafetyPolicy(incoming_dir=str(incoming), **kw)


def _fetcher(safety: SafetyFilter) -> Fetcher:
    return Fetcher(safety, transport=httpx.MockTransport(lambda r: httpx.Response(500)))


@pytest.mark.parametrize(("rel", "_kind"), [r for r in REFUSED if r[0] not in ("", "sub/..")])
def test_fetcher_refuses_each_with_one_counted_refusal(tree: Path, rel: str, _kind: str) -> None:
    safety = SafetyFilter(_policy(tree))
    with _fetcher(safety) as f, pytest.raises(Refusal) as info:
        f.read_local(rel)
    assert info.value.check == "local_path"
    assert safety.counters() == {name: int(name == "local_path") for name in CHECKS}


def test_fetcher_hard_links_when_the_policy_allows_them(tree: Path) -> None:
    safety = SafetyFilter(_policy(tree, allow_hardlinks=True))
    with _fetcher(safety) as f:
        assert f.read_local("hard.txt").data == SECRET


def test_tilde_is_expanded_in_paths_and_in_the_policy(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tree.parent))
    for incoming in (str(tree), "~/incoming"):
        policy = _policy(incoming)
        assert policy.incoming_dir == str(tree) and policy.allowed_read_dirs == (str(tree),)
        safety = SafetyFilter(policy)
        with _fetcher(safety) as f:
            assert f.read_local("~/incoming/sub/b.txt").data == INSIDE
            assert f.read_local("a.txt").data == INSIDE
            for bad in ("~/outside/secret.txt", "~/incoming/../outside/secret.txt"):
                with pytest.raises(Refusal):
                    f.read_local(bad)
        assert safety.counters()["local_path"] == 2


def test_a_path_reaching_the_dir_through_a_symlink_is_confined_there(tree: Path) -> None:
    alias = tree.parent / "alias"
    alias.symlink_to(tree, target_is_directory=True)
    safety = SafetyFilter(_policy(tree))
    with _fetcher(safety) as f:
        assert f.read_local(alias / "sub" / "b.txt").path == str(tree / "sub" / "b.txt")
        with pytest.raises(Refusal):
            f.read_local(alias / "rel-out.txt")


def test_missing_inside_is_a_fetch_error(tree: Path) -> None:
    safety = SafetyFilter(_policy(tree))
    with _fetcher(safety) as f, pytest.raises(FetchError, match="no such file"):
        f.read_local("sub/missing.txt")
    assert sum(safety.counters().values()) == 0


def test_a_symlink_loop_is_reported_once(tree: Path) -> None:
    safety = SafetyFilter(_policy(tree))
    with _fetcher(safety) as f, pytest.raises(Refusal, match="symlink loop"):
        f.read_local("loop.txt")
    assert safety.counters()["local_path"] == 1
    # In a folder and named explicitly: one report, saying it is a loop.
    entries = list(iter_files([tree, tree / "loop.txt"]))
    loops = [e for e in entries if e.path.endswith("loop.txt")]
    assert [e.skip_reason for e in loops] == ["symlink loop (too many levels of symbolic links)"]


# --------------------------------------------------------------------------- walker and answerer


def test_walker_yields_confined_locations_and_skips_what_leads_out(tree: Path) -> None:
    entries = list(iter_files([tree], allow_hardlinks=False))
    found = {os.path.relpath(e.path, tree): e for e in entries if not e.skipped}
    skipped = {os.path.relpath(e.path, tree): e.skip_reason for e in entries if e.skipped}
    # sub/b.txt, sub/deep/c.txt and sub/up-in.txt are the files in-rel.txt, in-abs.txt
    # and a.txt already yielded (once per inode; a folder's files before its subfolders).
    assert set(found) == {"a.txt", "in-rel.txt", "in-abs.txt"}
    assert all(e.root == str(tree) for e in found.values())
    assert found["in-rel.txt"].rel == ("in-rel.txt",)
    assert skipped["hard.txt"].startswith("hard link")
    assert skipped["abs-out.txt"] == "symlink points outside the folder being ingested"
    assert skipped["chain1.txt"] == "symlink points outside the folder being ingested"
    assert skipped["dir-out"] == "symlinked folder, not followed"
    assert (
        skipped["la.txt"]
        == skipped["loop.txt"]
        == ("symlink loop (too many levels of symbolic links)")
    )
    assert skipped["dangling.txt"] == "broken symlink"
    assert skipped["fifo.txt"] == "not a regular file"
    # Hard links are yielded by default (the user's own ingest), once per inode.
    assert "hard.txt" in {
        os.path.relpath(e.path, tree) for e in iter_files([tree]) if not e.skipped
    }


def test_answerer_reads_only_through_the_confined_path(tree: Path) -> None:
    (tree / "notes.md").write_text("The quokkaflux resonator hums at dawn, said the notes.")
    ans = CorpusAnswerer([tree], include_python_docs=False)
    assert ans.answer(SECRET_WORDS, k=10, min_score=0.0).text == ""
    reasons = dict(ans.skipped)
    assert reasons[str(tree / "hard.txt")].startswith("hard link")
    assert "quokkaflux" in ans.answer("quokkaflux resonator", min_score=0.0).text
    allowed = CorpusAnswerer([tree], include_python_docs=False, allow_hardlinks=True)
    assert "zanzibarquux" in allowed.answer(SECRET_WORDS, min_score=0.0).text


def test_answerer_skips_a_file_swapped_after_the_walk(tree: Path) -> None:
    ans = CorpusAnswerer([tree], include_python_docs=False)
    assert ans.stats.files == 3  # a.txt, in-rel.txt (sub/b.txt), in-abs.txt (sub/deep/c.txt)
    # Swap sub for a symlink to outside: its files vanish from the index, nothing leaks.
    os.rename(tree / "sub", tree / ".sub-hidden")
    (tree / "sub").symlink_to(tree.parent / "outside", target_is_directory=True)
    ans.refresh()
    assert ans.answer(SECRET_WORDS, k=10, min_score=0.0).text == ""
    assert ans.stats.files == 1
    reasons = dict(ans.skipped)
    assert reasons[str(tree / "in-rel.txt")] == "broken symlink"  # outside/b.txt: none


# --------------------------------------------------------------------------- hypothesis over paths

_PIECES = st.sampled_from(
    [
        "..",
        ".",
        "",
        "sub",
        "deep",
        "a.txt",
        "b.txt",
        "c.txt",
        "hard.txt",
        "abs-out.txt",
        "rel-out.txt",
        "dir-out",
        "up-out",
        "up-in.txt",
        "sub-link",
        "in-rel.txt",
        "loop.txt",
        "la.txt",
        "secret.txt",
        "outside",
        "incoming",
        "fifo.txt",
    ]
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(_PIECES, min_size=1, max_size=8), tilde=st.booleans())
def test_no_path_reads_outside_content(tree: Path, parts: list[str], tilde: bool) -> None:
    path = "/".join(parts)
    if tilde:
        path = "~/" + path  # HOME is not the tree: ~ never leads inside
    safety = SafetyFilter(_policy(tree))
    with _fetcher(safety) as f:
        try:
            data = f.read_local(path).data
        except (Refusal, FetchError):
            return
    assert data == INSIDE, path


# --------------------------------------------------------------------------- races


def _read_race(root: Path, tries: int) -> tuple[Counter, int, dict[str, int]]:
    incoming, targets = race_layout(root)
    safety = SafetyFilter(_policy(incoming))
    counts: Counter = Counter()
    with Swapper(root) as swapper, _fetcher(safety) as fetcher:
        for i in range(tries):
            target = targets[i % len(targets)]
            try:
                data = fetcher.read_local(target).data
            except Refusal:
                counts["refused"] += 1
                continue
            except FetchError:
                counts["failed"] += 1
                continue
            # Any other exception (a raw OSError …) fails the test right here.
            counts["ok" if data == INSIDE else "escape"] += 1
        cycles = swapper.stop()
    return counts, cycles, safety.counters()


def _check_race(counts: Counter, cycles: int, counters: dict[str, int], tries: int) -> None:
    assert sum(counts.values()) == tries
    assert counts["escape"] == 0, counts
    # Every refusal is a counted local_path refusal; the race really ran.
    assert counters == {name: counts["refused"] * (name == "local_path") for name in CHECKS}
    assert counts["refused"] > 0 and counts["ok"] > 0 and cycles > 0, (counts, cycles)


@pytest.mark.slow  # 6-14 s: in make test (CI), not in the developer's fast lane
def test_swap_race_100k_reads_no_escape(tmp_path: Path) -> None:
    tries = 100_000
    counts, cycles, counters = _read_race(tmp_path, tries)
    print(f"\nread race: {tries} reads, {cycles} swap cycles, {dict(counts)}")
    _check_race(counts, cycles, counters, tries)


def _answerer_race(root: Path, refreshes: int) -> tuple[Counter, int]:
    incoming, _ = race_layout(root)
    ans = CorpusAnswerer([incoming], include_python_docs=False)
    counts: Counter = Counter()
    with Swapper(root) as swapper:
        for _ in range(refreshes):
            ans.refresh()  # must not raise
            got = ans.answer(SECRET_WORDS, k=10, min_score=0.0)
            leaked = any(MARKER in p for p in got.passages)
            counts["escape" if leaked else "ok"] += 1
            counts["skipped"] += len(ans.skipped)
        cycles = swapper.stop()
    return counts, cycles


def test_answerer_refresh_race_no_escape(tmp_path: Path) -> None:
    counts, cycles = _answerer_race(tmp_path, 300)
    print(f"\nanswerer race: 300 refreshes, {cycles} swap cycles, {dict(counts)}")
    assert counts["escape"] == 0 and counts["ok"] == 300
    assert counts["skipped"] > 0 and cycles > 0  # the swaps were seen


@pytest.mark.slow
def test_answerer_refresh_race_3000_no_escape(tmp_path: Path) -> None:
    counts, cycles = _answerer_race(tmp_path, 3000)
    print(f"\nanswerer race: 3000 refreshes, {cycles} swap cycles, {dict(counts)}")
    assert counts["escape"] == 0 and counts["ok"] == 3000
    assert counts["skipped"] > 0 and cycles > 0


def test_walker_never_raises_while_the_tree_changes(tmp_path: Path) -> None:
    incoming, _ = race_layout(tmp_path)
    seen: Counter = Counter()
    with Swapper(tmp_path) as swapper:
        for _ in range(300):
            for entry in iter_files([incoming], allow_hardlinks=False):
                seen[entry.skip_reason or "ok"] += 1
                if not entry.skipped:
                    try:
                        with ConfinedDir(entry.root).open_file(entry.rel) as f:
                            assert f.read(1000) == INSIDE, entry
                    except ConfinementError:
                        seen["refused at open"] += 1
        assert swapper.stop() > 0
    assert seen["ok"] > 0
