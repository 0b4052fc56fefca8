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
@example([(1955, "("), (20, "("), (737, "\n"), (0, "x")])  # no kernel left to edit
def test_findings_with_the_memo_after_edits_are_those_without_it(edits: list[tuple[int, str]]) -> None:
    """One matcher checks each version of the text (its memos warm, the findings cache out of
    the way): the findings are those of a matcher that interprets every statement."""
    rules = _rules()
    remembering = Matcher(rules, version=(3, 9), remember_statements=True)
    text = BASE
    remembering.check_source(text)
    for at, typed in edits:
        bodies = [k.body for k in index_module(Document(text).root).kernels if k.body is not None]
        if not bodies:  # the edits broke the file before its first kernel
            break
        body = bodies[at % len(bodies)]
        offset = body.start_byte + 1 + at % max(1, body.end_byte - body.start_byte - 1)
        data = text.encode()
        data = data[:offset] + typed.encode() + data[offset + (1 if typed == "" else 0):]
        text = data.decode("utf-8", "replace")
        remembering._cache.clear()
        with_memo = remembering.check_source(text)
        plain = Matcher(rules, version=(3, 9))  # interprets every statement
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


def test_a_long_session_in_one_kernel_keeps_the_memo_within_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each edit inside a loop makes the loop a new text: the memo starts afresh at `LIMIT`
    names read (its size goes by them, not by entries, since a loop's entry reads many), and a
    long loop's text is kept as a digest, not in full."""
    from tritonsmith.analysis import statement_memo

    monkeypatch.setattr(statement_memo, "LIMIT", 400)
    memo = StatementMemo()
    for version in range(60):
        lines = ["import triton", "import triton.language as tl", "", "@triton.jit",
                 "def k(x_ptr, n, BLOCK: tl.constexpr):", "    offs = tl.arange(0, BLOCK)",
                 "    acc = tl.zeros((BLOCK,), dtype=tl.float32)", "    for i in range(n):"]
        lines += [f"        v{j} = tl.load(x_ptr + offs + i * {j + version})" for j in range(30)]
        lines += ["        acc += v0", "    tl.store(x_ptr + offs, acc)", ""]
        source = "\n".join(lines).encode()
        assert _issues(source, memo) == _issues(source, None)
        assert memo.size <= 400 + 64 and memo.ledger == [memo.size]
        assert all(len(key) <= statement_memo._TEXT_KEPT for key in memo._entries)


def test_an_edits_old_texts_stay_one_check_then_go() -> None:
    """What a check no longer meets is kept for one more check (typing then undoing replays the
    old text), then dropped: a long session keeps about the kernel's statements, not its history."""
    lines = ["import triton", "import triton.language as tl", "", "@triton.jit",
             "def k(x_ptr, n, BLOCK: tl.constexpr):", "    offs = tl.arange(0, BLOCK)",
             "    v = tl.load(x_ptr + offs)", "    tl.store(x_ptr + offs, v)", ""]
    source = "\n".join(lines).encode()
    memo = StatementMemo()
    _issues(source, memo)
    memo.end_check()
    first = memo.size
    for i in range(20):
        _issues(source.replace(b"v = tl.load(x_ptr + offs)", f"v = tl.load(x_ptr + offs + {i})".encode()), memo)
        memo.end_check()
    assert memo.size <= 2 * first and memo.ledger == [memo.size]
    hits = memo.hits
    _issues(source.replace(b"v = tl.load(x_ptr + offs)", b"v = tl.load(x_ptr + offs + 18)"), memo)  # undo
    memo.end_check()
    assert memo.hits - hits == 3  # every statement replayed, the one before the last edit too


def test_only_an_editors_matcher_remembers_statements() -> None:
    """The language server's checks remember (`Workspace(editing=True)`); a check of files
    checks each kernel once, where remembering would cost more than it replays."""
    from tritonsmith.server.session import Session
    from tritonsmith.settings import Settings
    from tritonsmith.workspace import Workspace

    assert Session().workspace.matcher.remember_statements
    assert not Workspace(None, Settings(), include_user_packs=False).matcher.remember_statements
    source = (ROOT / "examples" / "softmax.py").read_text()
    session = Session()
    state = session.open("file:///softmax.py", 1, source)
    session.ensure_checked(state)
    assert session.workspace.matcher._statement_memos
