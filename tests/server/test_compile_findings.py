"""The last save's compile findings follow their kernel while the user types, disappear when
the kernel they were computed on changes, and merge with the rule finding that already reports
the same mistake (issue 16)."""

from __future__ import annotations

from tritonsmith.analysis import Document, index_module
from tritonsmith.rules import Severity
from tritonsmith.rules.findings import Finding, Span
from tritonsmith.server.compile_findings import anchor, live, merge

SAVED = '''import triton
import triton.language as tl


@triton.jit
def first(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)


@triton.jit
def second(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)
'''


def _finding(code: str, row: int, column: int = 11) -> Finding:
    return Finding(code, code.lower(), Severity.ERROR, f"{code} here", Span((row, column), (row, column + 9), 0, 0))


def _now(source: str, anchored) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    document = Document(source)
    return [(f.code, f.span.start[0]) for f in live(anchored, document.source, index_module(document.root))]


def test_a_finding_moves_with_its_kernel_and_goes_when_the_kernel_changes():
    anchored = anchor(SAVED, [("first", [_finding("TS101", 6)]), ("second", [_finding("TS102", 12)])],
                      whole_file=[_finding("verification-failed", 0, 0)])
    assert _now(SAVED, anchored) == [("TS101", 6), ("TS102", 12), ("verification-failed", 0)]
    # Two lines added above: both kernels are as compiled, one file-level finding is not.
    shifted = "# a comment\n# another\n" + SAVED
    assert _now(shifted, anchored) == [("TS101", 8), ("TS102", 14)]
    # The first kernel edited (the user typed the fix): its finding is hidden, the other stays.
    fixed = SAVED.replace("tl.arange(0, BLOCK)\n    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)",
                          "tl.arange(0, 2 * BLOCK)\n    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)")
    assert fixed != SAVED and _now(fixed, anchored) == [("TS102", 12)]
    # A kernel renamed or deleted takes its findings with it.
    assert _now(SAVED.replace("def second(", "def third("), anchored) == [("TS101", 6)]
    # Back to the saved text: everything shows again.
    assert _now(SAVED, anchored) == [("TS101", 6), ("TS102", 12), ("verification-failed", 0)]


def test_a_compile_finding_the_rules_already_report_is_one_entry():
    static = [_finding("TS101", 6), _finding("TS953", 12)]
    compiled, both = merge(static, [_finding("TS101", 6, column=20), _finding("TS101", 7), _finding("spills", 6)])
    # Same rule on the same line: folded into the static one; another line or no rule: kept.
    assert [(f.code, f.span.start[0]) for f in compiled] == [("TS101", 7), ("spills", 6)]
    assert both == {0}


LAUNCHED = SAVED + '''

def launch_first(x):
    first[(1,)](x, BLOCK=100)


def unrelated(x):
    return x + 1
'''


def test_a_finding_goes_when_the_launch_that_set_its_constexprs_changes():
    """`BLOCK=100` at the launch made the compiler's TS101: typing 128 there fixes it, although
    the kernel's own text did not change (issue 16: the compiler's squiggle outlived the fix)."""
    anchored = anchor(LAUNCHED, [("first", [_finding("TS101", 6)]), ("second", [_finding("TS102", 12)])])
    assert _now(LAUNCHED, anchored) == [("TS101", 6), ("TS102", 12)]
    assert _now(LAUNCHED.replace("BLOCK=100", "BLOCK=128"), anchored) == [("TS102", 12)]
    # An edit elsewhere in the file (not in the kernel or its launcher) keeps the finding.
    assert _now(LAUNCHED.replace("x + 1", "x + 2"), anchored) == [("TS101", 6), ("TS102", 12)]
    # So does a launcher moved down by lines added between the kernels and it.
    moved = LAUNCHED.replace("\n\ndef launch_first", "\n\n# launches\n\ndef launch_first")
    assert _now(moved, anchored) == [("TS101", 6), ("TS102", 12)]


def test_compile_while_typing_recompiles_a_kernel_whose_launch_changed():
    from tritonsmith.server.compile_findings import compiled_on, kernel_texts

    texts = kernel_texts(LAUNCHED, ["first", "second"])
    edited = Document(LAUNCHED.replace("BLOCK=100", "BLOCK=128"))
    index = index_module(edited.root)
    changed = [k.name for k in index.kernels if compiled_on(edited.source, k) != texts[k.name]]
    assert changed == ["first"]


def test_a_mistake_seen_at_the_launch_too_is_one_problem_and_a_hint_at_the_launch():
    """`BLOCK=1000` at the launch breaks `tl.arange(0, BLOCK)`: the error is at the arange
    (where the compiler points, so its finding merges there) and the launch value gets a hint
    pointing back; VS Code lists hints nowhere in the Problems panel (issue 16: one entry per
    mistake)."""
    from lsprotocol import types

    from tritonsmith.rules import Matcher, load_rules, pack_paths
    from tritonsmith.server.convert import to_lsp_diagnostic

    source = SAVED + '''

def launch_first(x):
    first[(1,)](x, BLOCK=1000)
'''
    document = Document(source)
    findings = [f for f in Matcher(load_rules(pack_paths(None, include_user=False)), version=(3, 9))
                .check_source(source) if f.code == "TS101"]
    primary = [f for f in findings if not f.secondary]
    secondary = [f for f in findings if f.secondary]
    assert [f.span.start[0] for f in primary] == [6]  # the tl.arange in `first`
    assert [f.span.start[0] for f in secondary] == [source.splitlines().index("    first[(1,)](x, BLOCK=1000)")]
    assert secondary[0].related[0].span.start[0] == 6
    severities = [to_lsp_diagnostic("file:///k.py", document, f).severity for f in findings]
    assert sorted(severities) == [types.DiagnosticSeverity.Error, types.DiagnosticSeverity.Hint]
    # The secondary finding survives being moved by an edit above it.
    assert secondary[0].shifted(2, 10).secondary


def test_a_finding_at_the_launch_goes_with_its_kernel_and_moves_with_the_launcher():
    """Shared memory over the limit is reported at the launch: it belongs to the kernel it was
    compiled for (a compile of that kernel while typing recomputes it), is hidden when the
    launch changes and follows the launcher when lines are added above it."""
    row = LAUNCHED.splitlines().index("    first[(1,)](x, BLOCK=100)")
    anchored = anchor(LAUNCHED, [("first", [_finding("shared-memory-exceeded", row, 4)])])
    assert [item.kernel for item in anchored] == ["first"]
    assert _now(LAUNCHED, anchored) == [("shared-memory-exceeded", row)]
    assert _now(LAUNCHED.replace("BLOCK=100", "BLOCK=128"), anchored) == []
    # Lines added between the kernel and its launcher move only the launcher.
    moved = LAUNCHED.replace("\n\ndef launch_first", "\n\n# launches\n# here\n\ndef launch_first")
    assert _now(moved, anchored) == [("shared-memory-exceeded", row + 3)]
