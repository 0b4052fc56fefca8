"""`Matcher.check_syntax`: the checks that need no types, for a first answer sooner (the server's
first diagnostics, server/early.py). Its findings must be some of the full check's, each the
same: a client shows them, then the full set, and nothing may appear then vanish or change."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritonsmith.analysis import Document, index_module
from tritonsmith.rules.context import KernelContext, NeedsTypes
from tritonsmith.settings import Settings
from tritonsmith.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted([*(ROOT / "examples").rglob("*.py"), *(ROOT / "bench" / "type_probes").glob("*.py"),
                *(ROOT / "tests" / "fixtures").rglob("*.py")])


def _both(path: Path) -> tuple[list, list]:
    matcher = Workspace(None, Settings()).matcher
    document = Document(path.read_text(encoding="utf-8", errors="replace"))
    index = index_module(document.root)
    return matcher.check_syntax(document.source, index), matcher.check_module(document.source, index)


def _whole(finding) -> tuple:  # noqa: ANN001 - every field a client sees
    return (finding.code, finding.span, finding.message, finding.related, finding.fix, finding.secondary,
            finding.severity, finding.name)


def test_the_syntax_pass_is_a_subset_of_the_full_check_finding_for_finding() -> None:
    smaller = 0
    for path in FILES:
        syntax, full = _both(path)
        everything = [_whole(f) for f in full]
        assert all(_whole(f) in everything for f in syntax), path
        smaller += len(syntax) < len(full)
    assert smaller >= 20  # the typed checks are left out (most type probes find nothing without them)


def test_a_typed_finding_waits_for_the_full_check() -> None:
    syntax, full = _both(ROOT / "bench" / "type_probes" / "math_on_int__sqrt_i32.py")
    assert syntax == [] and [f.code for f in full] == ["TS704"]


def test_no_check_can_take_missing_types_for_an_answer() -> None:
    """A check's own `except Exception` must not swallow the question it could not ask."""
    assert not issubclass(NeedsTypes, Exception)
    document = Document((ROOT / "bench" / "type_probes" / "math_on_int__sqrt_i32.py").read_text())
    index = index_module(document.root)
    context = KernelContext(index.kernels[0], index, document.source, None, typed=False)
    for ask in (lambda: context.types(context.scenarios()[0]), lambda: context.param_types(context.scenarios()[0]),
                lambda: context.inferred(index.kernels[0].node)):
        with pytest.raises(NeedsTypes):
            ask()


def test_a_check_after_the_syntax_pass_runs_only_the_checks_it_left_out() -> None:
    """The server's early phase checks a large file twice over (server/early.py): the checks the
    syntax pass ran are not run again, and the findings are a fresh check's, whole."""
    left_out: set[tuple[int, str]] = set()
    ran: list[tuple[int, str]] = []
    syntax_pass = [True]

    def counted(check, name):  # noqa: ANN001, ANN202
        def run(context):  # noqa: ANN001, ANN202
            where = (context.kernel.outer.start_byte, name)
            if not syntax_pass[0]:
                ran.append(where)
            try:
                return list(check(context))
            except NeedsTypes:
                left_out.add(where)
                raise
        return run

    reran = 0
    for path in FILES:
        matcher = Workspace(None, Settings(), editing=True).matcher
        matcher._plan = [(rule, counted(check, rule.check), needles) for rule, check, needles in matcher._plan]
        document = Document(path.read_text(encoding="utf-8", errors="replace"))
        index = index_module(document.root)
        left_out.clear()
        ran.clear()
        syntax_pass[0] = True
        matcher.check_syntax(document.source, index)
        syntax_pass[0] = False
        both = matcher.check_module(document.source, index)
        alone = Workspace(None, Settings(), editing=True).matcher.check_module(document.source, index)
        assert [_whole(f) for f in both] == [_whole(f) for f in alone], path
        assert sorted(ran) == sorted(left_out), path  # each left-out check once, and nothing else
        reran += len(ran)
    assert reran > 100  # the typed checks did run in the second pass
