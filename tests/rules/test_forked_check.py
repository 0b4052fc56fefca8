"""One large file's kernels checked in forked processes (`rules/forked.py`): the same findings,
in the same order, as one process; a child that fails or dies loses nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritonsmith.rules import Matcher, load_rules, pack_paths
from tritonsmith.rules.forked import map_forked
from tritonsmith.rules.matcher import FORK_MIN_KERNELS

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import corpus  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only")

RULES = load_rules(pack_paths(None, include_user=False))


def test_a_file_split_between_processes_gets_exactly_the_findings_of_one_process(monkeypatch):
    import tritonsmith.rules.matcher as matcher

    forks = []
    monkeypatch.setattr(matcher, "map_forked", lambda *args: forks.append(args) or map_forked(*args))
    source = corpus.generate(6000, seed=3)  # about 140 kernels: above the threshold for two
    one = Matcher(RULES, version=(3, 4)).check_source(source)
    forked_matcher = Matcher(RULES, version=(3, 4))
    two = forked_matcher.check_source(source, jobs=2)
    assert len(forks) == 1 and len(one) > 10 and two == one
    # The children's cache entries came back: a second check here is all cache hits.
    calls = []
    forked_matcher._check_kernel = lambda *args: calls.append(args) or []  # type: ignore[method-assign]
    assert forked_matcher.check_source(source) == one and calls == []


def test_too_few_kernels_for_the_jobs_are_checked_in_one_process(monkeypatch):
    import tritonsmith.rules.matcher as matcher

    monkeypatch.setattr(matcher, "map_forked", lambda *args: pytest.fail("forked for a small file"))
    source = corpus.generate(40 * FORK_MIN_KERNELS // 2)  # fewer than 2 * FORK_MIN_KERNELS kernels
    Matcher(RULES, version=(3, 4)).check_source(source, jobs=2)


def _square_all(items: list[int]) -> list[int]:
    return [i * i for i in items]


def test_slices_come_back_in_order():
    assert map_forked(list(range(10)), 3, _square_all) == [[0, 9, 36, 81], [1, 16, 49], [4, 25, 64]]


def test_a_child_that_raises_or_dies_has_its_slice_done_again_in_the_parent():
    parent = os.getpid()

    def raising(items: list[int]) -> list[int]:
        if os.getpid() != parent:
            raise RuntimeError("a bug in a check")
        return _square_all(items)

    def dying(items: list[int]) -> list[int]:
        if os.getpid() != parent:
            os._exit(9)
        return _square_all(items)

    assert map_forked(list(range(6)), 2, raising) == [[0, 4, 16], [1, 9, 25]]
    assert map_forked(list(range(6)), 2, dying) == [[0, 4, 16], [1, 9, 25]]


def test_no_child_is_left_behind_when_the_parent_fails():
    parent = os.getpid()

    def failing_here(items: list[int]) -> list[int]:
        if os.getpid() == parent:
            raise KeyboardInterrupt  # the user pressed Ctrl-C while the children worked
        import time

        time.sleep(60)
        return items

    with pytest.raises(KeyboardInterrupt):
        map_forked(list(range(4)), 2, failing_here)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child of ours exists, running or unreaped


def test_the_command_line_splits_a_single_large_file_with_the_same_output(tmp_path: Path):
    """Run as a program (forking the test process is not what users do)."""
    path = tmp_path / "big.py"
    path.write_text(corpus.generate(6000, seed=5))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "tritonsmith", "check", str(path), "--format", "json", *args],
                              capture_output=True, text=True, timeout=300, check=False)

    one, two = run("--jobs", "1"), run("--jobs", "2")
    assert one.returncode == two.returncode == 1
    assert two.stdout == one.stdout and one.stdout.count('"code"') > 10
