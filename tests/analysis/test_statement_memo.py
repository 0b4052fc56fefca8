"""The type inference's statement memo (analysis/statement_memo.py): replaying what a statement
did gives exactly what interpreting it gives, after any edit, and an edit in a large kernel
interprets only the statements that read what it changed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tritonsmith.analysis import Document, index_module
from tritonsmith.analysis.statement_memo import StatementMemo
from tritonsmith.rules.context import KernelContext
from tritonsmith.rules.matcher import Matcher
from tritonsmith.rules.pack import load_rules, pack_paths

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import corpus  # noqa: E402

PROBES = sorted((ROOT / "bench" / "type_probes").glob("*.py")) + sorted((ROOT / "bench" / "type_probes_holdout").glob("*.py"))


def _issues(source: bytes, memo: StatementMemo | None, rounds: int = 1) -> list[Any]:
    """Every kernel's issues in every typed scenario, interpreted `rounds` times with `memo`
    (the last round's)."""
    document = Document(source)
    index = index_module(document.root)
    out: list[Any] = []
    for kernel in index.kernels:
        for _ in range(rounds):
            context = KernelContext(kernel, index, document.source, (3, 9), memo=memo)
            found = [(scenario.label, issue.kind, issue.node.type, issue.node.start_byte, issue.node.end_byte,
                      issue.message, issue.since)
                     for scenario in context.typed_scenarios() for issue in context.types(scenario).issues]
            context.close()
        out.append(found)
    return out


@pytest.mark.parametrize("path", PROBES[::3], ids=lambda p: p.stem)
def test_replayed_statements_give_the_interpreters_issues(path: Path) -> None:
    source = path.read_bytes()
    memo = StatementMemo()
    assert _issues(source, memo, rounds=2) == _issues(source, None)
    assert memo.hits > 0 or b"@triton.jit" not in source


def test_probes_with_issues_are_replayed_with_their_nodes() -> None:
    """Issues come back from the memo as nodes of the new tree (found by their path from the
    statement): the same type, the same bytes."""
    replayed = 0
    for path in PROBES:
        source = path.read_bytes()
        memo = StatementMemo()
        first = _issues(source, memo)
        if not any(first):
            continue
        hits = memo.hits
        assert _issues(source, memo) == first
        replayed += memo.hits > hits
    assert replayed >= 20


BASE = corpus.generate(200, seed=3)
TYPED = ["x", "\n", " ", "(", "tl.sum(x)", "x = x.to(tl.float16)\n", "acc = acc + 1.5\n", "offs = offs[:, None]\n",
         "mask = 1\n", "zzz\n", "# c\n", "2", ""]


def _rules() -> Any:
    return load_rules(pack_paths(None, include_user=False))


@pytest.mark.slow  # about 10 s: outside the fast loop
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(TYPED)), min_size=1, max_size=6))
@example([(120, "x = x.to(tl.float16)\n")])
def test_findings_with_the_memo_after_edits_are_those_without_it(edits: list[tuple[int, str]]) -> None:
    """One matcher checks each version of the text (its memos warm, the findings cache out of
    the way): the findings are those of a matcher that interprets every statement."""
    rules = _rules()
    remembering = Matcher(rules, version=(3, 9))
    text = BASE
    remembering.check_source(text)
    for at, typed in edits:
        kernels = index_module(Document(text).root).kernels
        body = kernels[at % len(kernels)].body
        assert body is not None
        offset = body.start_byte + 1 + at % max(1, body.end_byte - body.start_byte - 1)
        data = text.encode()
        data = data[:offset] + typed.encode() + data[offset + (1 if typed == "" else 0):]
        text = data.decode("utf-8", "replace")
        remembering._cache.clear()
        with_memo = remembering.check_source(text)
        plain = Matcher(rules, version=(3, 9))
        plain._statement_memo = lambda kernel, key: None  # type: ignore[method-assign]
        assert with_memo == plain.check_source(text), text


def test_an_edit_in_a_large_kernel_interprets_few_of_its_statements() -> None:
    """Renaming one assignment's target in a 60-statement kernel: the statements reading that
    name are interpreted again, the others replayed."""
    lines = ["import triton", "import triton.language as tl", "", "@triton.jit",
             "def big(x_ptr, out_ptr, n, BLOCK: tl.constexpr):",
             "    offs = tl.arange(0, BLOCK)",
             "    mask = offs < n"]
    lines += [f"    v{i} = tl.load(x_ptr + offs + {i}, mask=mask) * {i + 1}" for i in range(60)]
    lines += ["    tl.store(out_ptr + offs, v59, mask=mask)", ""]
    source = "\n".join(lines).encode()
    memo = StatementMemo()
    _issues(source, memo)
    edited = source.replace(b"    v30 = ", b"    w30 = ")
    hits, misses = memo.hits, memo.misses
    assert _issues(edited, memo) == _issues(edited, None)
    assert memo.misses - misses <= 2 and memo.hits - hits >= 60


def test_a_name_assigned_before_or_nowhere_is_told_apart() -> None:
    """`y = z + 1` after an `if` that alone assigns `z`: "not defined here". Once the branch
    assigns another name, `z` is a global and nothing is said: the same statement, the same
    values read, only where `z` is last assigned differs."""
    head = ["import triton", "import triton.language as tl", "", "@triton.jit",
            "def k(x_ptr, n, BLOCK: tl.constexpr):", "    offs = tl.arange(0, BLOCK)", "    if tl.program_id(0) > 0:"]
    tail = ["    y = z + 1", "    tl.store(x_ptr + offs, y)", ""]
    defined = "\n".join(head + ["        z = 1"] + tail).encode()
    renamed = "\n".join(head + ["        w = 1"] + tail).encode()
    memo = StatementMemo()
    first = _issues(defined, memo)
    assert [i[1] for i in first[0]] == ["undefined-name"]
    assert _issues(renamed, memo) == _issues(renamed, None) == [[]]
    assert _issues(defined, memo) == first
