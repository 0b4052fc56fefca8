"""The experience memory: isomorphism by canonical form, shortest representatives, difficulty,
hard-first demonstrations within a budget, persistence and concurrent writers; and searches
that record into it and read demonstrations from it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tritonsmith.analysis.canonical import canonical
from tritonsmith.errors import TritonsmithError
from tritonsmith.search.engine import Search, SearchOptions
from tritonsmith.search.journal import Journal
from tritonsmith.search.model import Evaluation, Outcome, StepContext, Task
from tritonsmith.state import ExperienceMemory, ExperienceTask, experience_task
from tritonsmith.state.experience import SCHEMA_VERSION, cut_solution

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "search" / "fixtures"

ADD = '''\
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """Adds two vectors."""
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements  # stay in bounds
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    n = out.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    return out
'''

# The same kernel: every local name, parameter and the kernel's own name changed, no comments
# or docstring, other whitespace, single quotes, a trailing comma.
ADD_RENAMED = '''\
@triton.jit
def vadd(a, b, c, size, BS: tl.constexpr,):
    i = tl.program_id(axis=0)
    o = i*BS + tl.arange(0, BS)
    m = o < size
    p = tl.load(a + o, mask=m)
    q = tl.load(b + o, mask=m)
    tl.store(c + o, p + q, mask=m)

def add(u, v):
    r = torch.empty_like(u)
    k = r.numel()
    g = lambda META: (triton.cdiv(k, META['BS']),)
    vadd[g](u, v, r, k, BS=1024)
    return r
'''


def _harness(body: str, launcher: str = "add", reference: str = "x + y") -> str:
    return "import torch\nimport triton\nimport triton.language as tl\n\n\n" + body + textwrap.dedent(f"""

        N = 4096


        def {launcher}_inputs():
            return [torch.randn(N), torch.randn(N)]


        def {launcher}_reference(x, y):
            return {reference}
        """)


def _task(source: str, *, path: str = "add.py", kernel: str = "add_kernel", launcher: str = "add") -> Task:
    return Task(path=path, kernel=kernel, source=source, spec=f"harness:{launcher}", device="interpreter")


def _fake(key: str, name: str = "") -> ExperienceTask:
    return ExperienceTask(key=key, description=f"task {key}", entry=name or key, kernel=name or key)


def _solution(name: str, body: str = "x + 1") -> str:
    return f"def {name}(x):\n    return {body}\n"


# -- canonical forms -------------------------------------------------------------------------


def test_kernels_the_same_up_to_renaming_share_one_canonical_form() -> None:
    assert canonical(ADD) == canonical(ADD_RENAMED)
    assert "tl . load" in canonical(ADD) and "mask" in canonical(ADD)  # API and keywords kept
    assert "add_kernel" not in canonical(ADD) and "offsets" not in canonical(ADD)  # local names not


@pytest.mark.parametrize(("old", "new"), [
    ("x + y, mask=mask", "x - y, mask=mask"),  # another operator
    ("BLOCK_SIZE=1024", "BLOCK_SIZE=512"),  # another constant
    ("tl.load(y_ptr + offsets, mask=mask)", "tl.load(y_ptr + offsets, mask=mask, other=0.0)"),  # another keyword
    ("tl.store(out_ptr", "tl.atomic_add(out_ptr"),  # another API call
    ("x = tl.load(x_ptr", "x = tl.load(y_ptr"),  # another binding of the same names
])
def test_kernels_that_differ_in_more_than_names_do_not(old: str, new: str) -> None:
    assert old in ADD
    assert canonical(ADD.replace(old, new)) != canonical(ADD)


def test_names_the_snippet_does_not_bind_are_kept() -> None:
    # `torch`, `range` and an attribute name are API: renaming them changes the meaning.
    assert canonical("def f(x):\n    return torch.sum(x)\n") != canonical("def f(x):\n    return numpy.sum(x)\n")
    assert canonical("def f(x):\n    return x.shape\n") != canonical("def f(x):\n    return x.size\n")
    assert canonical("def f(x):\n    return x\n") == canonical("def g(y):\n    return y\n")


def test_the_task_is_its_reference_not_its_file_or_names() -> None:
    one = experience_task(_task(_harness(ADD)))
    moved = experience_task(_task(_harness(ADD_RENAMED), path="elsewhere/other.py"))
    other = experience_task(_task(_harness(ADD, reference="x * y")))
    assert one.key == moved.key and one.key.startswith("harness:")
    assert other.key != one.key
    assert "add_kernel in add.py" in one.description


def test_a_solution_is_the_kernel_and_launcher_without_imports_or_harness() -> None:
    cut = cut_solution(_harness(ADD), experience_task(_task(_harness(ADD))))
    assert cut.startswith("@triton.jit\ndef add_kernel") and "def add(x, y)" in cut
    assert "import" not in cut and "add_inputs" not in cut and "add_reference" not in cut and "N = 4096" not in cut


# -- the memory ------------------------------------------------------------------------------


def test_isomorphic_solutions_keep_one_representative_the_shortest(tmp_path: Path) -> None:
    memory = ExperienceMemory(tmp_path)
    task = _task(_harness(ADD))
    memory.record_solution(task, _harness(ADD), 2.0, "interpreter")
    memory.record_solution(task, _harness(ADD_RENAMED), 1.5, "interpreter")  # shorter, isomorphic
    memory.record_solution(task, _harness(ADD.replace("BLOCK_SIZE=1024", "BLOCK_SIZE=2048")), 3.0, "gpu")
    solutions = memory.solutions(task)
    assert len(solutions) == 2
    renamed = next(s for s in solutions if "vadd" in s.source)
    assert renamed.seen == 2 and renamed.speedup == 2.0  # the class keeps its best speedup
    assert renamed.canonical == memory.solutions(task)[0].canonical  # shortest first
    [info] = memory.tasks()
    assert info.classes == 2 and "vadd" in (info.solution or "")


def test_difficulty_is_one_minus_the_success_rate(tmp_path: Path) -> None:
    memory = ExperienceMemory(tmp_path)
    task = _fake("t")
    for outcome in (Outcome.CORRECT, Outcome.WRONG, Outcome.NOT_COMPILED, "correct"):
        memory.record_attempt(task, outcome)
    [info] = memory.tasks()
    assert (info.attempts, info.successes) == (4, 2)
    assert info.success_rate == 0.5 and info.difficulty == 0.5


def _solved(memory: ExperienceMemory, key: str, successes: int, attempts: int, body: str = "x + 1") -> None:
    task = _fake(key)
    for i in range(attempts):
        memory.record_attempt(task, "correct" if i < successes else "wrong")
    if successes:
        memory.record_solution(task, _solution(key, body))


def test_demonstrations_come_hardest_first_then_mixed(tmp_path: Path) -> None:
    memory = ExperienceMemory(tmp_path)
    rates = {"t10": 1, "t20": 2, "t30": 3, "t40": 4, "t50": 5, "t60": 6, "t90": 9}  # successes of 10
    for key, successes in rates.items():
        _solved(memory, key, successes, 10)
    _solved(memory, "unsolved", 0, 10)
    demos = memory.demonstrations(token_budget=100_000, groups=3)
    order = [next(key for key in rates if f"def {key}(" in demo) for demo in demos]
    # Hardest third first (t10, t20, t30), then the rest alternately from the hard and easy ends.
    assert order == ["t10", "t20", "t30", "t40", "t90", "t50", "t60"]
    assert demos[0].startswith("# Task: task t10\n# Verified in 1 of 10 attempts (10%).\ndef t10(x):")
    assert not any("unsolved" in demo for demo in demos)


def test_demonstrations_fit_the_budget_and_leave_out_the_excluded_task(tmp_path: Path) -> None:
    memory = ExperienceMemory(tmp_path)
    _solved(memory, "hard", 1, 10, body="x + " + " + ".join(["x"] * 200))  # about 230 tokens
    _solved(memory, "middle", 5, 10)
    _solved(memory, "easy", 9, 10)
    demos = memory.demonstrations(token_budget=100)
    assert demos and sum(len(d) for d in demos) / 4 <= 100
    assert not any("def hard(" in d for d in demos)  # too long: skipped, the next ones still fit
    assert len(memory.demonstrations(token_budget=10_000)) == 3
    kept = memory.demonstrations(token_budget=10_000, exclude_task=_fake("middle"))
    assert len(kept) == 2 and not any("def middle(" in d for d in kept)
    assert memory.demonstrations(token_budget=10_000, exclude_task="easy") == memory.demonstrations(
        token_budget=10_000, exclude_task=_fake("easy"))
    assert memory.demonstrations(token_budget=0) == []


def test_the_memory_outlives_the_instance_and_shares_the_state_db(tmp_path: Path) -> None:
    from tritonsmith.state import FailureLog

    log = FailureLog(tmp_path)  # the failure log and the journal share the file
    journal = Journal(tmp_path)
    memory = ExperienceMemory(tmp_path)
    _solved(memory, "t", 1, 3)
    memory.close()
    again = ExperienceMemory(tmp_path)
    [info] = again.tasks()
    assert (info.key, info.attempts, info.successes, info.classes) == ("t", 3, 1, 1)
    db = sqlite3.connect(tmp_path / ".tritonsmith" / "state.db")
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    assert meta["experience_schema_version"] == str(SCHEMA_VERSION)
    assert "schema_version" in meta and "search_schema_version" in meta
    db.close()
    again.close()
    log.close()
    journal.close()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    ExperienceMemory(tmp_path).close()
    db = sqlite3.connect(tmp_path / ".tritonsmith" / "state.db")
    db.execute("UPDATE meta SET value = ? WHERE key = 'experience_schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    with pytest.raises(TritonsmithError, match="newer tritonsmith"):
        ExperienceMemory(tmp_path)


_WRITER = """
import sys, time
from pathlib import Path
from tritonsmith.state.experience import ExperienceMemory, ExperienceTask
root, who, start = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
memory = ExperienceMemory(root)
while time.time() < start:
    time.sleep(0.005)
task = ExperienceTask(key="shared", description="shared", entry="f", kernel="f")
for i in range(40):
    memory.record_attempt(task, "correct" if i % 2 else "wrong")
    memory.record_solution(task, f"def f(x):\\n    return x + {i % 5}  # {who}\\n", float(i), "interpreter")
memory.close()
"""


def test_two_processes_recording_at_once_lose_nothing(tmp_path: Path) -> None:
    import time

    ExperienceMemory(tmp_path).close()  # created first: the writers race on rows, not on the schema
    start = str(time.time() + 1.5)
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), who, start], cwd=ROOT,
                                stderr=subprocess.PIPE) for who in ("a", "b")]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err.decode()
    memory = ExperienceMemory(tmp_path)
    [info] = memory.tasks()
    assert (info.attempts, info.successes) == (80, 40)
    solutions = memory.solutions("shared")
    assert len(solutions) == 5  # `x + 0` … `x + 4`, comments aside
    assert sum(s.seen for s in solutions) == 80


# -- searches record into it and read from it ----------------------------------------------


class _Proposer:
    """Refines by doubling BLOCK_SIZE=…; every candidate a whole file."""

    name = "scripted"
    cost_usd = 0.0

    def __init__(self) -> None:
        self.contexts: list[StepContext] = []

    def refine(self, context: StepContext) -> tuple[str, list[object]]:
        self.contexts.append(context)
        base = context.chain[-1][0]
        block = int(base.split("BLOCK_SIZE=")[1].split(")")[0])
        return base.replace(f"BLOCK_SIZE={block})", f"BLOCK_SIZE={block * 2})"), []

    def regenerate(self, context: StepContext) -> str:
        self.contexts.append(context)
        return context.task.source.replace("BLOCK_SIZE=16)", "BLOCK_SIZE=4096)")


class _Evaluator:
    """Correct up to BLOCK_SIZE=1024, wrong above; time 1 / BLOCK_SIZE."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.baseline_ms: float | None = None

    def evaluate(self, source: str) -> Evaluation:
        block = int(source.split("BLOCK_SIZE=")[-1].split(")")[0])
        if block > 1024:
            return Evaluation(Outcome.WRONG, message="mismatch")
        time_ms = 1000.0 / block
        if self.baseline_ms is None:
            self.baseline_ms = time_ms
        return Evaluation(Outcome.CORRECT, speedup=self.baseline_ms / time_ms, time_ms=time_ms)

    def close(self) -> None:
        pass


def test_a_search_records_attempts_and_solutions(tmp_path: Path) -> None:
    source = (FIXTURES / "slow_add.py").read_text()
    task = Task(path=str(tmp_path / "slow_add.py"), kernel="add_kernel", source=source, spec="harness:add",
                device="interpreter")
    memory = ExperienceMemory(tmp_path)
    result = Search(task, _Proposer(), _Evaluator(), Journal(tmp_path), SearchOptions(steps=8, seed=1),
                    memory=memory).run()
    steps = [n for n in result.tree.evaluated() if n.parent is not None and n.kind.value != "root"]
    correct = [n for n in steps if n.evaluation is not None and n.evaluation.outcome is Outcome.CORRECT]
    [info] = memory.tasks()
    assert info.attempts == len(steps) == 8  # the original is not an attempt
    assert info.successes == len(correct) > 0
    stored = memory.solutions(task)
    assert stored and all("def add(" in s.source and "add_inputs" not in s.source for s in stored)
    blocks = {int(n.source.split("BLOCK_SIZE=")[-1].split(")")[0]) for n in correct}
    assert len(stored) == len(blocks)  # one class per distinct block size, duplicates merged
    assert max(s.speedup or 0 for s in stored) == max(n.evaluation.speedup or 0 for n in correct if n.evaluation)


def test_a_second_search_gets_the_first_ones_demonstrations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tritonsmith.search import setup

    monkeypatch.setattr(setup, "CandidateEvaluator", _Evaluator)  # no workers: scripted outcomes
    (tmp_path / "pyproject.toml").write_text("")
    add = tmp_path / "slow_add.py"
    add.write_text((FIXTURES / "slow_add.py").read_text())
    # Another task: the same launcher, another reference.
    mul = tmp_path / "slow_mul.py"
    mul.write_text(add.read_text().replace("return x + y", "return x * y").replace("x + y, mask", "x * y, mask"))

    def search(path: Path) -> setup.OpenSearch:
        # Interpreter time: the scripted evaluator reads only BLOCK_SIZE, not the warps moves
        # the predicted objective adds.
        return setup.open_search(setup.SearchRequest(path=path, kernel="add_kernel", device="interpreter",
                                                     proposer="offline", steps=6, seed=0, objective="interpreter"))

    with search(add) as first:
        assert first.search.options.demonstrations == ()  # an empty memory
        first.search.run()
        assert first.memory is not None
        [info] = first.memory.tasks()
        assert info.attempts == 6 and info.successes > 0
    with search(mul) as second:
        demos = second.search.options.demonstrations
        assert len(demos) == 1 and "slow_add.py" in demos[0] and "tl.load" in demos[0]
        assert "x + y" in demos[0] and "add_reference" not in demos[0]
    with search(add) as again:  # its own task is left out
        assert again.search.options.demonstrations == ()


def test_verified_kernels_are_known_good_code_for_graduation(tmp_path: Path) -> None:
    """`tritonsmith adapt graduate` refuses matchers that would flag a verified kernel."""
    from tritonsmith.cli.adapt import _verified_kernels

    memory = ExperienceMemory(tmp_path)
    memory.record_solution(_task(_harness(ADD)), _harness(ADD), 2.0, "interpreter")
    memory.close()
    [(label, source)] = _verified_kernels(tmp_path)
    assert label.startswith("experience: ") and "tl.load" in source


def test_candidates_the_search_journal_saw_compile_are_known_good_code_too(tmp_path: Path) -> None:
    from tritonsmith.cli.adapt import _verified_kernels
    from tritonsmith.state.journal import NODE_COLUMNS, JournalStore

    journal = JournalStore(tmp_path)
    search = journal.start("k.py", "add_kernel", {}, {})
    for node_id, outcome, source in ((1, "correct", "verified = 1\n"), (2, "wrong", "compiled_but_wrong = 1\n"),
                                     (3, "not_compiled", "broken = 1\n"), (4, "correct", "verified = 1\n")):
        row = dict.fromkeys(NODE_COLUMNS)
        row.update(node_id=node_id, parent_id=0, kind="refine", source=source, outcome=outcome, reward=0.0,
                   message="", resources="{}", seconds=1.0, proposer="offline", cost_usd=0.0, propose_seconds=0.0,
                   created=float(node_id))
        journal.record_node(search, row)
    journal.close()
    sources = [source for label, source in _verified_kernels(tmp_path) if label.startswith("search candidate")]
    # Newest first, each text once; a candidate that did not compile is no evidence of anything.
    assert sources == ["verified = 1\n", "compiled_but_wrong = 1\n"]
