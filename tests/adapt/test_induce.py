"""Offline induction: clusters become learned rules, general ones only become active, nothing is
counted twice, and two learners at once lose no rule and no count."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tritonsmith.adapt.induce import Thresholds, generality_filter, induce
from tritonsmith.errors import RulePackError
from tritonsmith.rules import load_rules, pack_paths
from tritonsmith.state import FailureLog, kernel_hash, load_learned
from tritonsmith.state.learned import learned_path

NOT_DEFINED = "at 3:8:\n    y = x + {name}\n        ^\nNameError('{name} is not defined')"
DTYPE_CALL = "TypeError(\"'dtype' object is not callable\")"


def fail(log: FailureLog, kernel: str, message: str, *, path: str = "a.py", stage: str = "compile",
         rules: list[str] | None = None, variant: int = 0) -> int:
    return log.record(path=path, kernel=kernel, stage=stage, message=message, rules=rules or [], target="sm_90",
                      snippet=f"    y = x + {kernel}", kernel_hash=kernel_hash(f"{kernel} {variant}"),
                      triton_version="3.9.0")


def test_a_cluster_of_three_across_two_kernels_becomes_an_active_signature_rule(tmp_path: Path):
    log = FailureLog(tmp_path)
    ids = [fail(log, "k1", NOT_DEFINED.format(name="z")), fail(log, "k1", NOT_DEFINED.format(name="w"), variant=1),
           fail(log, "k2", NOT_DEFINED.format(name="scale"), path="b.py")]
    [learned] = induce(tmp_path)
    rule = learned.rule
    assert (learned.new, learned.added) == (True, 3)
    assert (rule.code, rule.status, rule.hold, rule.count, len(rule.kernels)) == ("TSL001", "active", None, 3, 2)
    assert rule.statement == ('You cannot write Triton kernel code that fails to compile with '
                              '"NameError: <name> is not defined".')
    assert rule.name == "not-defined" and rule.category == "NameError" and rule.severity.value == "warning"
    assert rule.template == "NameError: <name> is not defined"
    assert list(rule.failures) == ids and rule.first_seen and rule.last_seen
    assert rule.bad == "    y = x + k1" and rule.examples[0] == "NameError('z is not defined')"
    # The signature matches the compiler's messages, including ones for names it never saw.
    assert rule.signatures and re.search(rule.signatures[0], "NameError('offs_k is not defined')")
    # On disk, in the workspace pack, in force for the workspace.
    assert [r.code for r in load_learned(tmp_path)] == ["TSL001"]
    assert load_rules(pack_paths(tmp_path, include_user=False)).get("TSL001") is not None
    assert "format = 2" in learned_path(tmp_path).read_text()


def test_small_clusters_wait_and_one_kernel_stays_pending(tmp_path: Path):
    log = FailureLog(tmp_path)
    fail(log, "k1", DTYPE_CALL)
    fail(log, "k2", DTYPE_CALL)
    assert induce(tmp_path) == []  # two failures: not yet a rule, and not claimed
    for variant in range(3):
        fail(log, "k3", NOT_DEFINED.format(name=f"v{variant}"), variant=variant)
    fail(log, "k3", DTYPE_CALL)
    learned = {item.rule.template: item.rule for item in induce(tmp_path)}
    dtype, names = learned["TypeError: 'dtype' object is not callable"], learned["NameError: <name> is not defined"]
    assert (dtype.status, dtype.count, len(dtype.kernels)) == ("active", 3, 3)
    assert (names.status, names.hold) == ("pending", "seen in 1 kernel; needs 2")
    # The same failure saved twice (same kernel text) counts once.
    assert induce(tmp_path) == []
    fail(log, "k4", NOT_DEFINED.format(name="q"), path="other.py")
    fail(log, "k4", NOT_DEFINED.format(name="q"), path="other.py")
    [update] = induce(tmp_path)
    assert (update.new, update.added, update.rule.code) == (False, 2, names.code)
    assert (update.rule.status, update.rule.count, len(update.rule.kernels)) == ("active", 4, 2)


def test_failures_a_builtin_rule_explains_and_numeric_mismatches_are_not_learned(tmp_path: Path):
    log = FailureLog(tmp_path)
    for kernel in ("k1", "k2", "k3"):
        fail(log, kernel, "ValueError: arange's range must be a power of 2", rules=["TS101"])
        fail(log, kernel, "output 0 differs from the reference: max abs diff 0.5", stage="verify:compare")
    assert induce(tmp_path) == []
    for kernel in ("k1", "k2", "k3"):  # a runtime error of a candidate is learned, as a run-time rule
        fail(log, kernel, "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered",
             stage="search:candidate", path=f"{kernel}.py")
    [learned] = induce(tmp_path)
    assert learned.rule.statement.startswith("You cannot launch a Triton kernel that fails at run time with")


def test_reviewed_and_rejected_rules_keep_their_status_but_count(tmp_path: Path):
    from tritonsmith.cli.adapt import _decide
    from tritonsmith.state.learned import update_learned

    log = FailureLog(tmp_path)
    for variant in range(3):
        fail(log, "k1", DTYPE_CALL, variant=variant)
    [pending] = induce(tmp_path)
    assert pending.rule.status == "pending"
    update_learned(tmp_path, lambda rules: _decide(rules, [], [pending.rule.code]))
    fail(log, "k2", DTYPE_CALL)
    [again] = induce(tmp_path)
    assert (again.new, again.rule.status, again.rule.reviewed, again.rule.count) == (False, "rejected", True, 4)
    assert load_rules(pack_paths(tmp_path, include_user=False)).get(pending.rule.code) is None  # not in force


def test_hand_written_rules_in_the_pack_are_kept(tmp_path: Path):
    pack = learned_path(tmp_path)
    pack.parent.mkdir()
    pack.write_text('format = 1\n\n[[rules]]\ncode = "TS109"\nname = "mine"\ntitle = "t"\n'
                    'statement = "You cannot."\nseverity = "hint"\ncategory = "B"\n')
    log = FailureLog(tmp_path)
    for kernel in ("k1", "k2", "k3"):
        fail(log, kernel, DTYPE_CALL)
    induce(tmp_path)
    assert [(r.code, r.severity.value) for r in load_learned(tmp_path)] == [("TS109", "hint"), ("TSL001", "warning")]


def test_a_malformed_pack_is_never_overwritten(tmp_path: Path):
    pack = learned_path(tmp_path)
    pack.parent.mkdir()
    pack.write_text("[[rules]\ncode = \n")
    log = FailureLog(tmp_path)
    for kernel in ("k1", "k2", "k3"):
        fail(log, kernel, DTYPE_CALL)
    with pytest.raises(RulePackError, match="rules.toml"):
        induce(tmp_path)
    assert pack.read_text() == "[[rules]\ncode = \n"
    assert all(f["induced"] is None for f in log.failures())  # rolled back: counted later, once fixed


def test_custom_thresholds(tmp_path: Path):
    log = FailureLog(tmp_path)
    fail(log, "k1", DTYPE_CALL)
    fail(log, "k2", DTYPE_CALL)
    [learned] = induce(tmp_path, thresholds=Thresholds(count=2, kernels=2))
    assert learned.rule.status == "active"


# -- the generality filter --------------------------------------------------------------------


@pytest.mark.parametrize(("statement", "reason"), [
    ("You cannot have an `else:` at line 223", "names a line number (at line 223)"),
    ("You cannot have an else at 12:4: in a kernel", "names a line number (at 12:4)"),
    ("You cannot use PADDING_LEFT as a block size.", "names a file-specific identifier (PADDING_LEFT)"),
    ("You cannot pass `_mean_invstd_kernel` a float.", "names a file-specific identifier (_mean_invstd_kernel)"),
    ("You cannot reuse `acc` after the loop.", "names a file-specific identifier (acc)"),
    ("You cannot use myBuffer in tl.load.", "names a file-specific identifier (myBuffer)"),
    ("You cannot import /home/me/kernels/helpers.py in a kernel.", "names a file path (/home/me/kernels/helpers.py)"),
])
def test_the_generality_filter_rejects_specific_rules(statement: str, reason: str):
    assert generality_filter(statement) == reason


@pytest.mark.parametrize("statement", [
    "You cannot call `tl.float32` as a function.",
    "You cannot index a Triton tensor with a constexpr index.",
    "You cannot use `tl.static_range` with a bound that is not a constexpr; lower num_stages instead.",
    "You cannot use and/or on block tensors.",
    'You cannot write Triton kernel code that fails to compile with "NameError: <name> is not defined".',
    "You cannot have an `else:` after a `for` loop.",
    # What several messages said, joined: types and Triton's own names, not a path.
    'You cannot write Triton kernel code that fails to compile with "Both operands must be same dtype. Got bf16/fp16"',
    "You cannot use atomic_max/atomic_min on fp16; tl.make_shape_compatible says the shapes differ.",
])
def test_the_generality_filter_keeps_general_rules(statement: str):
    assert generality_filter(statement) is None


def test_the_kernels_own_names_are_rejected():
    assert generality_filter("You cannot call scale twice.", names=["scale"]) == "names a kernel or local variable (scale)"


# -- two learners at once ---------------------------------------------------------------------

_LEARNER = """
import sys
from pathlib import Path
from tritonsmith.adapt.induce import induce
from tritonsmith.state import FailureLog, kernel_hash

root, who = Path(sys.argv[1]), sys.argv[2]
log = FailureLog(root)
for i in range(12):
    for signature in ("TypeError(\\"'dtype' object is not callable\\")", f"ValueError: bad thing number '{who}'"):
        log.record(path=f"{who}{i % 3}.py", kernel=f"k{i % 3}", stage="compile", message=signature, rules=[],
                   kernel_hash=kernel_hash(f"{who}{i}"))
    induce(root)
"""


def test_two_processes_learning_at_once_lose_no_rule_and_no_count(tmp_path: Path):
    processes = [subprocess.Popen([sys.executable, "-c", _LEARNER, str(tmp_path), who], stderr=subprocess.PIPE)
                 for who in ("A", "B")]
    errors = [p.communicate(timeout=120)[1].decode() for p in processes]
    assert all(p.returncode == 0 for p in processes), errors
    induce(tmp_path)  # whatever the last learner left unclaimed
    rules = {r.template: r for r in load_learned(tmp_path)}
    assert rules["TypeError: 'dtype' object is not callable"].count == 24
    assert rules["ValueError: bad thing number <name>"].count == 24  # A and B: one template, every count
    assert len(rules) == 2 and len({r.code for r in rules.values()}) == 2
    assert all(f["induced"] for f in FailureLog(tmp_path).failures(limit=None))


def test_failures_and_rules_from_an_older_signature_meet_new_failures(tmp_path: Path):
    import sqlite3

    # Two failures logged and a rule learned when signatures kept element types ("but got fp32").
    log = FailureLog(tmp_path)
    old = "ValueError: histogram only supports <n>-bit integer input, but got fp32"
    ids = [fail(log, kernel, "ValueError: histogram only supports 32-bit integer input, but got fp32", path=f"{kernel}.py")
           for kernel in ("k1", "k2", "k3")]
    log.close()
    db = sqlite3.connect(tmp_path / ".tritonsmith" / "state.db")
    db.executemany("UPDATE failures SET signature = ? WHERE id = ?", [(old, i) for i in ids[:2]])
    db.commit()
    db.close()
    [learned] = induce(tmp_path)  # the old and the new signature are one cluster
    assert learned.rule.count == 3
    pack = learned_path(tmp_path)
    new = learned.rule.template
    assert new != old and new in pack.read_text()
    pack.write_text(pack.read_text().replace(new, old))  # as an older version wrote the rule
    # A later fp16 failure (a new signature) joins the rule instead of starting another.
    log = FailureLog(tmp_path)
    fail(log, "k4", "ValueError: histogram only supports 32-bit integer input, but got fp16", path="k4.py")
    log.close()
    [more] = induce(tmp_path)
    assert (more.new, more.rule.code, more.rule.count) == (False, learned.rule.code, 4)
