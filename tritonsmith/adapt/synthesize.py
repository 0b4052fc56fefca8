"""Task synthesis for `tritonsmith adapt run --synthesize N` (AdaExplore's `generate_data.py`,
"composite" prompts, for Triton).

Each prompt holds three seed problems drawn from a folder of KernelBench-format tasks (the
project's suite, bench/problems/, by default) and three torch.nn layer descriptions drawn from
`data/nn_layers.json`, and asks for one new module chaining 3-6 operations: the reference
(`Model`, `get_inputs`, `get_init_inputs`) **and** a straightforward Triton `ModelNew`, the
search's starting point (without a kernel to start from, the offline proposer has nothing to
move).

A task is kept only if it passes, in order:

1. **structure**: one ```python block that parses, defines `Model`, `get_inputs`,
   `get_init_inputs` and `ModelNew`, and has at least one `@triton.jit` kernel;
2. **the reference runs on the CPU** and **`ModelNew` verifies**: one `verify_spec` under
   Triton's interpreter, in the evaluator's sandboxed workers (never in this process: the
   model's code is untrusted), at the sizes the verifier scales down to.

Dropped answers are kept on disk beside the kept ones (`rejected/`), with the reason in the
report. Nothing here imports torch or triton.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from ..analysis import Document, index_module
from ..evaluator.specs import detect_kernelbench
from .llm_induce import TextModel

__all__ = [
    "SYSTEM_PROMPT",
    "Synthesized",
    "PricedTextModel",
    "anthropic_synthesis_model",
    "load_layers",
    "parse_task",
    "synthesis_prompt",
    "synthesize",
]

SYSTEM_PROMPT = (
    "You write benchmark problems for GPU kernel optimisation in KernelBench's format: one Python "
    "module with a PyTorch reference and a first, plain Triton implementation of it."
)

_INSTRUCTIONS = """\
Write one new problem, clearly different from the examples, whose `Model.forward` chains 3 to 6
operations (use at least one of the layers above). The module must define:

- `class Model(nn.Module)`: the reference, in plain PyTorch;
- module-level integer size constants (like `batch_size = 128`), realistic for a GPU, read by
- `get_inputs()`: the forward's inputs, a list of float32 CPU tensors (`torch.randn(...)`, no
  `device=`), and
- `get_init_inputs()`: the arguments of `Model(...)`, a list;
- `class ModelNew(nn.Module)`: a straightforward, correct Triton implementation, the starting
  point of an optimisation: the same constructor arguments, and parameters and submodules
  created and initialised exactly as `Model` creates them, in the same order (both models are
  built under the same seed and nothing is copied between them), and a `forward` whose
  computation all happens in `@triton.jit` kernels (PyTorch only allocates outputs and reads
  shapes), with simple masked blocks launched with a small block size such as 16. Do not
  optimise it; fusing everything into one kernel is not required.

Import only torch, torch.nn, triton and triton.language. Answer with one ```python block holding
the whole module, and nothing else."""


class PricedTextModel(TextModel, Protocol):
    """What synthesis needs of a model: a `TextModel` (llm_induce.py) that says what it has spent (the LLM
    proposers have both: `LLMProposer.ask`, `cost_usd`)."""

    @property
    def cost_usd(self) -> float: ...


@dataclass
class Synthesized:
    """One synthesis attempt.

    Attributes:
        index: the attempt's number in this run (1-based).
        kept: it passed every check; `path` is the task file.
        reason: why it was dropped ("" when kept).
        stage: where it ended: "answer" (no usable block), "structure", "reference",
            "verify", "kept".
        path: where the module was written (kept tasks, and dropped ones under `rejected/`).
        seeds: the seed problems' file names.
        layers: the layer names given to the model.
    """

    index: int
    kept: bool
    reason: str
    stage: str
    path: str | None = None
    seeds: tuple[str, ...] = ()
    layers: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "kept": self.kept, "reason": self.reason, "stage": self.stage,
                "path": self.path, "seeds": list(self.seeds), "layers": list(self.layers)}


def load_layers() -> list[dict[str, str]]:
    """The torch.nn layer descriptions shipped in `tritonsmith/adapt/data/nn_layers.json`."""
    text = resources.files("tritonsmith.adapt").joinpath("data/nn_layers.json").read_text(encoding="utf-8")
    return list(json.loads(text)["layers"])


def synthesis_prompt(seeds: Sequence[tuple[str, str]], layers: Sequence[dict[str, str]]) -> str:
    """The user message: the seed problems (name, source), the layer descriptions, the ask."""
    parts = ["Here are example problems, one module each.\n"]
    for i, (name, source) in enumerate(seeds, 1):
        parts.append(f"## Example {i} ({name})\n```python\n{source.rstrip()}\n```\n")
    parts.append("## torch.nn layers to draw on")
    parts.extend(f"- `{layer['signature']}`: {layer['description']}" for layer in layers)
    parts.append("\n## Your task\n" + _INSTRUCTIONS)
    return "\n".join(parts)


def parse_task(answer: str) -> tuple[str | None, str]:
    """The module in the answer and "", or None and why it is unusable."""
    from ..search.model import ProposalError
    from ..search.prompts import parse_file

    try:
        source = parse_file(answer)
    except ProposalError as error:
        return None, str(error)
    try:
        ast.parse(source)
    except SyntaxError as error:
        return None, f"the module does not parse: line {error.lineno}: {error.msg}"
    index = index_module(Document(source).root)
    defined = {n.name for n in ast.parse(source).body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    missing = [name for name in ("Model", "get_inputs", "get_init_inputs", "ModelNew") if name not in defined]
    if missing:
        return None, "the module does not define " + ", ".join(missing)
    if not index.kernels:
        return None, "the module has no @triton.jit kernel"
    return (source if source.endswith("\n") else source + "\n"), ""


def _seed_sources(seed_folder: Path) -> list[tuple[str, str]]:
    files = sorted(p for p in seed_folder.glob("*.py") if not p.name.startswith("_"))
    return [(p.name, p.read_text(encoding="utf-8")) for p in files]


def synthesize(
    count: int,
    *,
    model: PricedTextModel,
    seed_folder: Path,
    out: Path,
    rng: random.Random | None = None,
    timeout_s: float = 120.0,
    should_stop: Callable[[], bool] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Synthesized]:
    """Ask `model` for `count` tasks; write the kept ones to `out` and the dropped ones to
    `out/rejected`; return every attempt.

    Args:
        seed_folder: KernelBench-format problems; each prompt gets three of them.
        timeout_s: the verification's per-job limit (a synthesised reference can hang).
        should_stop: checked before each call (the run's time or spending budget).
    """
    rng = rng or random.Random(0)
    seeds = _seed_sources(seed_folder)
    if not seeds:
        raise ValueError(f"{seed_folder}: no seed problems (*.py)")
    layers = load_layers()
    out.mkdir(parents=True, exist_ok=True)
    results: list[Synthesized] = []
    with _Checker(out, timeout_s) as checker:
        for index in range(1, count + 1):
            if should_stop is not None and should_stop():
                break
            chosen = rng.sample(seeds, min(3, len(seeds)))
            picked = rng.sample(layers, min(3, len(layers)))
            item, stop = checker.attempt(index, model, chosen, picked)
            results.append(item)
            if progress is not None:
                shown = f"kept {Path(item.path).name}" if item.kept and item.path else f"dropped ({item.stage}: {item.reason})"
                progress(f"synthesis {index}/{count}: {shown}")
            if stop:
                break
    return results


class _Checker:
    """Asks for one task and checks it; holds the verification's worker pools between tasks."""

    def __init__(self, out: Path, timeout_s: float) -> None:
        self.out = out
        self.rejected = out / "rejected"
        self.timeout_s = timeout_s
        self.seen: set[str] = set()
        self.pools: tuple[Any, Any] | None = None

    def __enter__(self) -> _Checker:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pools is not None:
            for pool in self.pools:
                pool.close()

    def _reject(self, path: Path) -> Path:
        self.rejected.mkdir(parents=True, exist_ok=True)
        target = self.rejected / path.name
        path.replace(target)
        return target

    def attempt(self, index: int, model: PricedTextModel, seeds: Sequence[tuple[str, str]],
                layers: Sequence[dict[str, str]]) -> tuple[Synthesized, bool]:
        """One task: (what happened, whether no later attempt can succeed)."""
        from ..evaluator.pool import WorkerPool
        from ..evaluator.verify import verify_spec
        from ..search.model import ProposalError, ProposerStopped

        names, layer_names = tuple(n for n, _ in seeds), tuple(layer["name"] for layer in layers)

        def made(kept: bool, reason: str, stage: str, path: Path | None = None) -> Synthesized:
            return Synthesized(index, kept, reason, stage, str(path) if path else None, names, layer_names)

        try:
            answer = model.ask(SYSTEM_PROMPT, synthesis_prompt(seeds, layers), purpose="synthesis")
        except ProposerStopped as error:  # no key, the cap reached: no later call can succeed
            return made(False, str(error), "answer"), True
        except ProposalError as error:
            return made(False, str(error), "answer"), False
        source, why = parse_task(answer)
        if source is None:
            self.rejected.mkdir(parents=True, exist_ok=True)
            path = self.rejected / f"syn_{index:03d}.txt"
            path.write_text(answer, encoding="utf-8")
            return made(False, why, "structure", path), False
        digest = hashlib.sha256(source.encode()).hexdigest()
        if digest in self.seen:
            return made(False, "the same module as an earlier answer", "structure"), False
        self.seen.add(digest)
        path = self.out / f"syn_{index:03d}.py"
        path.write_text(source, encoding="utf-8")
        spec = detect_kernelbench(path, source)
        if spec is None:
            return made(False, "not a KernelBench problem", "structure", self._reject(path)), False
        if self.pools is None:
            env = dict(os.environ, TRITON_INTERPRET="1")
            self.pools = (WorkerPool(1, env=env), WorkerPool(1, env=env))
        # In the evaluator's sandboxed workers: the reference runs first, then ModelNew against it.
        verdict = verify_spec(spec, mode="interpreter", pools=self.pools, time_it=False, timeout_s=self.timeout_s)
        if verdict.ok:
            return made(True, "", "kept", path), False
        stage = "reference" if verdict.stage in ("inputs", "reference", "spec") else "verify"
        what = "the reference does not run on the CPU" if stage == "reference" else "ModelNew does not verify"
        detail = verdict.message.splitlines()[0] if verdict.message else verdict.stage
        return made(False, f"{what}: {detail}", stage, self._reject(path)), False


def anthropic_synthesis_model(*, model: str | None = None, spending_cap_usd: float | None = 5.0,
                              client: Any = None, api_key: str | None = None) -> PricedTextModel:
    """Claude for synthesis: temperature 1.0 (AdaExplore's), room for a whole module.

    The key comes from ANTHROPIC_API_KEY unless given; without one this raises
    MissingAPIKeyError. `client` replaces the SDK client (tests replay written responses).
    """
    from ..search.proposers.anthropic_proposer import DEFAULT_MODEL, AnthropicProposer

    return AnthropicProposer(model=model or DEFAULT_MODEL, api_key=api_key, client=client, max_tokens=8192,
                             temperature=1.0, reviser=False, spending_cap_usd=spending_cap_usd)
