"""`tritonsmith adapt run` and the ablation: searches of the suite's problems with the offline
proposer on the CPU, synthesis through the real `anthropic` SDK with written responses (its HTTP
transport replaced; no network), and pass@1 / fast_1 on hand-made search results."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from tritonsmith.adapt.run import (
    Metrics,
    RunOptions,
    RunReport,
    TaskRecord,
    metrics,
    search_outcome,
)
from tritonsmith.cli import main
from tritonsmith.search.engine import SearchResult
from tritonsmith.search.model import Edit, Evaluation, Outcome, StepContext, Task
from tritonsmith.search.tree import Tree

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = REPO / "bench" / "problems"


def _evaluation_tools() -> None:
    pytest.importorskip("triton")
    pytest.importorskip("numpy")


def _tasks(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "tasks"
    folder.mkdir()
    for name in names:
        shutil.copyfile(PROBLEMS / name, folder / name)
    return folder


# -- (a) adapt run on two problems, offline, on the CPU -------------------------------------


@pytest.mark.compiler
def test_adapt_run_searches_each_task_with_the_memory_and_reports(tmp_path: Path):
    _evaluation_tools()
    from tritonsmith.adapt.run import adapt_run

    tasks = _tasks(tmp_path, "row_max.py", "divide_leaky_relu.py")
    lines: list[str] = []
    options = RunOptions(tasks=tasks, workspace=tmp_path / "ws", steps=2, device="interpreter", proposer="offline")
    report = adapt_run(options, progress=lines.append)

    assert [t.name for t in report.tasks] == ["divide_leaky_relu.py", "row_max.py"]
    assert report.stopped == "done" and not report.baseline and not report.notes
    for record in report.tasks:
        assert record.searched and record.memory and record.steps == 2
        assert record.kernel in ("row_max_kernel", "divide_leaky_relu_kernel")
        assert record.first == "correct" and record.first_correct  # a launch move stays correct
        assert record.best_speedup is not None
        assert Path(record.path).is_file() and ".tritonsmith/adapt/" in record.path
    # The memory: the second task's prompts get the first task's verified kernel.
    assert report.tasks[0].demonstrations == 0 and report.tasks[1].demonstrations == 1
    before, after = report.before_after()
    assert (before.tasks, after.tasks) == (1, 1)
    assert before.pass_at_1 == after.pass_at_1 == 1.0
    assert (tmp_path / "ws" / ".tritonsmith" / "state.db").is_file()

    data = json.loads(json.dumps(report.to_json()))
    assert data["tasks_run"] == 2 and data["compare"] == "halves" and data["rules"] == []
    assert data["before"]["pass_at_1"] == 1.0 and set(data["after"]) == {
        "tasks", "first_correct", "fast", "pass_at_1", "fast_1"}
    assert data["overall"]["tasks"] == 2
    text = report.text()
    assert "before: pass@1 100% (1/1)" in text and "row_max.py (row_max_kernel): 2 candidates" in text
    assert any(line.startswith("[1/2] divide_leaky_relu.py") for line in lines)


class _StaticAssert:
    """A proposer whose every candidate fails to compile the same way (a failed static_assert),
    each with a different text: the failures the memory should learn a rule from."""

    name = "scripted"
    cost_usd = 0.0

    def __init__(self) -> None:
        self.calls = 0

    def _broken(self, context: StepContext) -> str:
        self.calls += 1
        source = context.task.source
        head = source.index("    pid = tl.program_id") if "    pid = tl.program_id" in source else \
            source.index("    row = tl.program_id")
        return source[:head] + f"    tl.static_assert(BLOCK_SIZE < {self.calls}, \"block too big\")\n" + source[head:]

    def refine(self, context: StepContext) -> tuple[str, list[Edit]]:
        return self._broken(context), []

    def regenerate(self, context: StepContext) -> str:
        return self._broken(context)


@pytest.mark.compiler
def test_recurring_failures_become_a_learned_rule_in_the_report(tmp_path: Path):
    _evaluation_tools()
    from tritonsmith.adapt.run import adapt_run

    tasks = _tasks(tmp_path, "row_max.py", "divide_leaky_relu.py")
    options = RunOptions(tasks=tasks, workspace=tmp_path / "ws", steps=2, device="interpreter", proposer="offline")
    report = adapt_run(options, proposer_factory=_StaticAssert)

    # Four failures (distinct texts) in two kernels: one rule, active.
    assert [t.first for t in report.tasks] == ["not_compiled"] * 2
    assert metrics(report.tasks) == Metrics(tasks=2, first_correct=0, fast=0)
    (rule,) = report.rules
    assert rule["code"].startswith("TSL") and rule["statement"].startswith("You cannot")
    assert rule["status"] == "active" and rule["kernels"] >= 2 and rule["count"] >= 3
    assert rule["new"] and rule["added"] == rule["count"]
    assert "rules learned or updated:" in report.text() and rule["code"] in report.text()


# -- the command line ---------------------------------------------------------------------------


@pytest.mark.compiler
def test_the_command_compares_against_a_fresh_workspace_and_prints_json(tmp_path: Path, capsys):
    _evaluation_tools()
    tasks = _tasks(tmp_path, "row_sum.py", "row_max.py")
    code = main(["adapt", "run", str(tasks), "--workspace", str(tmp_path / "ws"), "--steps", "1", "--max-tasks", "1",
                 "--device", "cpu", "--proposer", "offline", "--compare", "baseline", "--format", "json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    data = json.loads(captured.out)
    assert data["stopped"] == "max-tasks" and data["tasks_run"] == 1 and data["compare"] == "baseline"
    (baseline,), (adapted,) = data["baseline"], data["tasks"]
    assert baseline["name"] == adapted["name"] == "row_max.py"
    assert not baseline["memory"] and adapted["memory"]
    assert "/baseline/01/" in baseline["path"]
    assert data["before"]["tasks"] == data["after"]["tasks"] == 1
    assert "[1/2] row_max.py" in captured.err


def test_the_command_refuses_synthesis_without_consent_and_a_missing_folder(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert main(["adapt", "run", str(PROBLEMS), "--synthesize", "2", "--workspace", str(tmp_path)]) == 2
    assert "--allow-upload" in capsys.readouterr().err
    assert main(["adapt", "run", str(tmp_path / "nowhere")]) == 2
    assert "not a folder" in capsys.readouterr().err
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert main(["adapt", "run", str(PROBLEMS), "--synthesize", "1", "--allow-upload"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


# -- (b) synthesis with written Anthropic responses -----------------------------------------

anthropic = None
httpx2 = None

KEPT = '''\
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    """Scale, add a second input, sigmoid."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, y):
        z = x * self.scale
        z = z + y
        return torch.sigmoid(z)


batch_size = 128
features = 2048


def get_inputs():
    return [torch.randn(batch_size, features), torch.randn(batch_size, features)]


def get_init_inputs():
    return [0.5]


@triton.jit
def scale_add_sigmoid_kernel(x_ptr, y_ptr, out_ptr, n, scale, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.sigmoid(x * scale + y), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
        scale_add_sigmoid_kernel[grid](x, y, out, n, self.scale, BLOCK_SIZE=16)
        return out
'''
# The reference multiplies (batch, features) by itself: a shape error on every input.
CRASHING = KEPT.replace("z = z + y", "z = z + torch.zeros(7, 11, 13)")  # broadcasts at no size the task has
MALFORMED = "Here is a plan: scale the input, add the second one, and apply a sigmoid. Then write kernels."


def _sdk():
    global anthropic, httpx2
    anthropic = pytest.importorskip("anthropic")
    httpx2 = pytest.importorskip("httpx2")


def _reply(text: str):
    body = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 5200, "output_tokens": 900, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}
    return httpx2.Response(200, json=body)


class _Server:
    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.bodies: list[dict] = []

    def __call__(self, request):
        self.bodies.append(json.loads(request.content))
        return _reply(self.texts.pop(0))


def _model(server: _Server):
    from tritonsmith.adapt.synthesize import anthropic_synthesis_model

    client = anthropic.Anthropic(api_key="sk-ant-test-NOT-A-KEY",
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    return anthropic_synthesis_model(client=client, spending_cap_usd=1.0)


@pytest.mark.compiler
def test_synthesis_keeps_a_verified_task_and_drops_a_crashing_reference_and_a_malformed_answer(tmp_path: Path):
    _evaluation_tools()
    _sdk()
    from tritonsmith.adapt.run import adapt_run

    server = _Server(f"```python\n{KEPT}```", f"```python\n{CRASHING}```", MALFORMED)
    # --max-tasks 0: synthesise only (searching the kept task is test (a)'s business).
    options = RunOptions(tasks=PROBLEMS, workspace=tmp_path / "ws", steps=1, device="interpreter", proposer="offline",
                         synthesize=3, allow_upload=True, max_tasks=0)
    report = adapt_run(options, synthesis_model=_model(server))

    kept, crashed, malformed = report.synthesized
    assert kept["kept"] and kept["stage"] == "kept" and Path(kept["path"]).read_text() == KEPT
    assert not crashed["kept"] and crashed["stage"] == "reference"
    assert "the reference does not run on the CPU" in crashed["reason"] and "/rejected/" in crashed["path"]
    assert not malformed["kept"] and malformed["stage"] == "structure" and "```python" in malformed["reason"]
    assert report.stopped == "max-tasks" and not report.tasks
    assert report.cost_usd > 0  # the synthesis calls were priced
    assert "synthesised 1 of 3 tasks" in report.text()

    # Each prompt: three seed problems from the folder, three layer descriptions, temperature 1.
    first = server.bodies[0]
    prompt = first["messages"][0]["content"]
    assert first["temperature"] == 1.0 and "KernelBench" in first["system"][0]["text"]
    assert prompt.count("## Example ") == 3 and "class ModelNew" in prompt
    layers = prompt.split("## torch.nn layers to draw on")[1].split("## Your task")[0]
    assert layers.count("\n- `") == 3
    assert "3 to 6" in prompt
    assert all(name.endswith(".py") for name in kept["seeds"]) and len(kept["layers"]) == 3


def test_parse_task_names_what_is_missing():
    from tritonsmith.adapt.synthesize import parse_task

    assert parse_task(f"```python\n{KEPT}```") == (KEPT, "")
    assert parse_task("```python\n" + KEPT.split("class ModelNew")[0] + "```")[1] == "the module does not define ModelNew"
    assert "does not parse" in parse_task("```python\ndef broken(:\n    triton\n```")[1]
    no_kernel = KEPT.replace("@triton.jit\n", "")
    assert parse_task(f"```python\n{no_kernel}```")[1] == "the module has no @triton.jit kernel"


def test_the_layer_descriptions_ship_with_the_package():
    from tritonsmith.adapt.synthesize import load_layers

    layers = load_layers()
    assert len(layers) >= 20 and all(set(layer) == {"name", "signature", "description"} for layer in layers)


# -- (c) pass@1 and fast_1 on hand-made search results ----------------------------------------

TASK = Task(path="k.py", kernel="k", source="start", spec="kernelbench", device="interpreter")


def _result(first: Outcome | None, *others: tuple[Outcome, float | None, tuple[float, float] | None],
            root_spread: tuple[float, float] | None = (0.97, 1.03), stopped: str = "budget") -> SearchResult:
    """A search: the start (node 0), then node 1 with outcome `first`, then `others`."""
    tree = Tree()
    if stopped == "original-fails":
        tree.add(tree.root, _kind("root"), "start", Evaluation(Outcome.WRONG, message="max abs error 0.5"))
        return SearchResult("s", TASK, tree, stopped)
    root = tree.add(tree.root, _kind("root"), "start", Evaluation(Outcome.CORRECT, speedup=1.0, spread=root_spread))
    # A correct node 1 is as fast as the start: correct, not faster.
    node_1 = (first, 1.0, (0.98, 1.02)) if first is Outcome.CORRECT else (first, None, None)
    steps = ([node_1] if first is not None else []) + list(others)
    for i, (outcome, speedup, spread) in enumerate(steps):
        tree.add(root, _kind("refine"), f"candidate {i}", Evaluation(outcome, speedup=speedup, spread=spread))
    return SearchResult("s", TASK, tree, stopped)


def _kind(name: str):
    from tritonsmith.search.model import StepKind

    return StepKind(name)


def test_task_outcome_reads_node_one_for_pass_at_1_and_the_spread_for_fast():
    slow_first = search_outcome(_result(Outcome.CORRECT, (Outcome.CORRECT, 0.9, (0.85, 0.95))))
    assert slow_first.first_correct and not slow_first.fast and slow_first.steps == 2
    within_noise = search_outcome(_result(Outcome.WRONG, (Outcome.CORRECT, 1.02, (1.01, 1.04))))
    assert within_noise.first == "wrong" and not within_noise.first_correct and not within_noise.fast
    fast = search_outcome(_result(Outcome.NOT_COMPILED, (Outcome.WRONG, None, None), (Outcome.CORRECT, 3.0, (2.8, 3.2))))
    assert not fast.first_correct and fast.fast and fast.best_speedup == 3.0
    assert slow_first.best_speedup == 1.0
    no_spread = search_outcome(_result(Outcome.CORRECT, (Outcome.CORRECT, 1.5, None), root_spread=None))
    assert no_spread.fast
    nothing = search_outcome(_result(None))
    assert nothing.searched and nothing.first is None and not nothing.first_correct and nothing.steps == 0
    failed = search_outcome(_result(None, stopped="original-fails"))
    assert not failed.searched


def _record(name: str, result: SearchResult, *, memory: bool) -> TaskRecord:
    o = search_outcome(result)
    return TaskRecord(name=name, path=name, kernel="k", memory=memory, stopped=result.stopped, searched=o.searched,
                      first=o.first, first_correct=o.first_correct, fast=o.fast, best_speedup=o.best_speedup,
                      steps=o.steps, seconds=1.0, cost_usd=0.0, search_id="s")


def _ablation_module():
    spec = importlib.util.spec_from_file_location("adapt_ablation", REPO / "bench" / "adapt_ablation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["adapt_ablation"] = module
    spec.loader.exec_module(module)
    return module


def test_the_ablation_summarises_pass_at_1_and_fast_1_per_arm():
    ablation = _ablation_module()
    good = (Outcome.CORRECT, 2.0, (1.9, 2.1))
    without = [_record("a", _result(Outcome.WRONG, good), memory=False),
               _record("b", _result(Outcome.NOT_COMPILED), memory=False),
               _record("c", _result(Outcome.CORRECT), memory=False),
               _record("d", _result(None, stopped="original-fails"), memory=False)]
    with_memory = [_record("a", _result(Outcome.CORRECT, good), memory=True),
                   _record("b", _result(Outcome.CORRECT), memory=True),
                   _record("c", _result(Outcome.CORRECT, good), memory=True),
                   _record("d", _result(None, stopped="original-fails"), memory=True)]
    summary = ablation.summarise({"without": without, "with": with_memory})
    assert summary["without"] == Metrics(tasks=3, first_correct=1, fast=1)
    assert summary["with"] == Metrics(tasks=3, first_correct=3, fast=2)
    assert summary["without"].pass_at_1 == pytest.approx(1 / 3) and summary["with"].fast_1 == pytest.approx(2 / 3)
    assert ablation.table(summary).splitlines()[2:] == [
        "| without | 3 | 33% (1/3) | 33% (1/3) |",
        "| with | 3 | 100% (3/3) | 67% (2/3) |",
    ]
    assert ablation.summarise({"none": []})["none"].pass_at_1 is None


def test_the_ablation_split_is_deterministic_and_disjoint():
    ablation = _ablation_module()
    files = sorted(PROBLEMS.glob("*.py"))
    train, held = ablation.split(files, 4, seed=0)
    assert len(held) == 4 and len(train) == len(files) - 4 and not set(train) & set(held)
    assert ablation.split(files, 4, seed=0) == (train, held) and ablation.split(files, 4, seed=1) != (train, held)
    with pytest.raises(ValueError):
        ablation.split(files, len(files), seed=0)


def test_halves_compare_the_first_half_of_the_searched_tasks_with_the_rest():
    records = [_record(str(i), _result(Outcome.CORRECT if i >= 2 else Outcome.WRONG), memory=True) for i in range(5)]
    records.insert(1, _record("x", _result(None, stopped="original-fails"), memory=True))
    report = RunReport(run_id="r", workspace="w", options={"compare": "halves"}, tasks=records)
    before, after = report.before_after()
    assert before == Metrics(tasks=2, first_correct=0, fast=0)
    assert after == Metrics(tasks=3, first_correct=3, fast=0)
    assert "the starting kernel does not verify" in report.text()


@pytest.mark.compiler
def test_the_ablation_with_recorded_llm_answers_shows_the_memory_at_work(tmp_path: Path):
    """End to end with the Anthropic proposer (real SDK, recorded answers): training searches
    fail the same way until a rule is learned; on the held-out task the model answers correctly
    when that rule is in its prompt's pitfalls (with the memory) and repeats the mistake without."""
    _evaluation_tools()
    _sdk()
    from tritonsmith.search.proposers import AnthropicProposer

    names = ("row_max.py", "divide_leaky_relu.py", "scale_bias_gelu.py")
    sources = {name: (PROBLEMS / name).read_text() for name in names}
    failures = iter(range(1, 1000))

    def broken(source: str) -> str:
        head = source.index("    pid = tl.program_id") if "    pid = tl.program_id" in source else \
            source.index("    row = tl.program_id")
        return source[:head] + f"    tl.static_assert(BLOCK_SIZE < {next(failures)}, \"block too big\")\n" + source[head:]

    def answer(request):
        body = json.loads(request.content)
        system = "\n".join(block["text"] for block in body["system"])
        source = next(s for s in sources.values() if s in system)  # the task's file is in the prompt
        remembered = "Common Pitfalls" in system and "block too big" in system.split("Common Pitfalls")[1]
        fixed = source.replace("BLOCK_SIZE=16)", "BLOCK_SIZE=64)", 1)
        return _reply(f"```python\n{fixed if remembered else broken(source)}```")

    def proposer() -> AnthropicProposer:
        client = anthropic.Anthropic(api_key="sk-ant-test-NOT-A-KEY",
                                     http_client=httpx2.Client(transport=httpx2.MockTransport(answer)))
        return AnthropicProposer(client=client, reviser=False, spending_cap_usd=5.0, sleep=lambda s: None)

    problems = _tasks(tmp_path, *names)
    ablation = _ablation_module()
    # The factory replaces each search's proposer after it is set up (offline, so no key is needed).
    options = RunOptions(tasks=problems, workspace=tmp_path / "unused", steps=1, device="interpreter",
                         proposer="offline")
    result = ablation.ablation(problems, held_out=1, seed=0, options=options, train_steps=2,
                               workdir=tmp_path / "work", proposer_factory=proposer)
    learned = [r for r in result["adapt_run"]["rules"] if r["status"] == "active"]
    assert learned and "block too big" in learned[0]["statement"]
    without, with_memory = result["arms"]["without"]["metrics"], result["arms"]["with"]["metrics"]
    assert without["first_correct"] == 0 and with_memory["first_correct"] == 1, result["table"]
