"""Does the memory help? pass@1 and fast_1 on held-out tasks, with and without it.

    .venv/bin/python bench/adapt_ablation.py [--problems bench/problems] [--held-out 4] [--seed 0]
        [--train-steps 10] [--steps 10] [--proposer auto|offline|anthropic|openai] [--allow-upload]
        [--device auto|cpu|gpu] [--workdir DIR] [--out bench/results/adapt_ablation.json]

1. **Split** the suite (bench/problems/, 14 problems) into training and held-out tasks: the files
   sorted by name, shuffled with `--seed`, the last `--held-out` held out (`split`).
2. **Adapt** on the training tasks: `tritonsmith adapt run` (`adapt_run`) in a fresh workspace,
   memory updates on (failure log, offline induction after each task, experience memory).
3. **Evaluate** each held-out task twice, each search in a workspace of its own so that no
   held-out task teaches another (the memory is frozen at test time, as AdaExplore's
   `memory_update: false`):
   - *without*: an empty workspace (no learned rules, no experience, no failure history);
   - *with*: a copy of the trained workspace's memory (`.tritonsmith/` without the run's files).
4. **Report** pass@1 (node 1, the first proposed candidate, verified correct) and fast_1 (some
   correct candidate beats the starting kernel by more than the timing spread) per arm, as
   `tritonsmith.adapt.run` defines them; a table on stdout and the JSON at `--out`.

It runs for real when a key is set (`--proposer anthropic --allow-upload`, ANTHROPIC_API_KEY), on
a GPU when there is one (`--device auto`). With the offline proposer it runs anywhere, but that
proposer reads no prompt, so both arms propose the same candidates (same seed): pass@1 must come
out equal, and fast_1 differs only by timing noise, which under the interpreter on a busy
machine is large (a check of the harness, not of the memory). `--spending-cap` applies to the
training run and to each held-out search separately. tests/adapt/test_adapt_run.py runs the
pieces: the split, the metrics on hand-made search results, synthesis with recorded responses.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from tritonsmith.adapt.run import (
    Metrics,
    RunOptions,
    TaskRecord,
    adapt_run,
    metrics,
    search_task,
    task_files,
    workspace,
)

ROOT = Path(__file__).resolve().parents[1]
ARMS = ("without", "with")
_RUN_FILES = ("adapt",)  # the adapt run's copies and synthesised tasks: not memory


def split(files: Sequence[Path], held_out: int, seed: int) -> tuple[list[Path], list[Path]]:
    """(training, held-out): `files` sorted, shuffled with `seed`, the last `held_out` held out."""
    if not 0 < held_out < len(files):
        raise ValueError(f"--held-out must lie between 1 and {len(files) - 1}")
    order = sorted(files)
    random.Random(seed).shuffle(order)
    return sorted(order[:-held_out]), sorted(order[-held_out:])


def copy_memory(trained: Path, fresh: Path) -> None:
    """The trained workspace's memory (its `.tritonsmith/`, less the run's files) into `fresh`."""
    source = trained / ".tritonsmith"
    target = fresh / ".tritonsmith"
    target.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.name in _RUN_FILES or item.name.endswith((".lock", "-journal")):
            continue
        if item.is_dir():
            shutil.copytree(item, target / item.name, dirs_exist_ok=True)
        else:
            shutil.copy2(item, target / item.name)


def summarise(arms: Mapping[str, Sequence[TaskRecord]]) -> dict[str, Metrics]:
    """pass@1 and fast_1 per arm."""
    return {arm: metrics(records) for arm, records in arms.items()}


def table(summary: dict[str, Metrics]) -> str:
    """A Markdown table of the arms' metrics."""
    rows = ["| memory | tasks | pass@1 | fast_1 |", "|---|---|---|---|"]
    for arm, m in summary.items():
        rows.append(f"| {arm} | {m.tasks} | {_pct(m.pass_at_1, m.first_correct, m.tasks)} | "
                    f"{_pct(m.fast_1, m.fast, m.tasks)} |")
    return "\n".join(rows)


def _pct(value: float | None, count: int, total: int) -> str:
    return "-" if value is None else f"{100 * value:.0f}% ({count}/{total})"


def ablation(
    problems: Path,
    *,
    held_out: int,
    seed: int,
    options: RunOptions,
    train_steps: int,
    workdir: Path,
    proposer_factory: Callable[[], Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Split, adapt on the training tasks, evaluate the held-out ones with and without the
    memory; return the results (what `--out` gets)."""
    say = progress or (lambda line: None)
    train, held = split(task_files(problems), held_out, seed)
    train_dir = workdir / "train-tasks"
    train_dir.mkdir(parents=True, exist_ok=True)
    for path in train:
        shutil.copyfile(path, train_dir / path.name)
    trained = workspace(workdir / "trained")
    say(f"adapting on {len(train)} training tasks: {', '.join(p.stem for p in train)}")
    run = adapt_run(replace(options, tasks=train_dir, workspace=trained, steps=train_steps, synthesize=0),
                    progress=say, proposer_factory=proposer_factory)
    arms: dict[str, list[TaskRecord]] = {arm: [] for arm in ARMS}
    for path in held:
        for arm in ARMS:
            fresh = workspace(workdir / "eval" / arm / path.stem)
            if arm == "with":
                copy_memory(trained, fresh)
            copy = fresh / path.name
            shutil.copyfile(path, copy)
            record = search_task(options, copy, memory=arm == "with", proposer_factory=proposer_factory)
            arms[arm].append(record)
            say(f"{arm} memory: {record.line()}")
    summary = summarise(arms)
    return {
        "problems": str(problems), "seed": seed, "train": [p.name for p in train], "held_out": [p.name for p in held],
        "train_steps": train_steps, "steps": options.steps, "proposer": options.proposer, "device": options.device,
        "adapt_run": run.to_json(),
        "arms": {arm: {"metrics": summary[arm].to_json(), "tasks": [asdict(r) for r in arms[arm]]} for arm in ARMS},
        "table": table(summary),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=Path, default=ROOT / "bench" / "problems")
    parser.add_argument("--held-out", type=int, default=4, help="held-out tasks (default 4)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train-steps", type=int, default=10, help="candidates per training task")
    parser.add_argument("--steps", type=int, default=10, help="candidates per held-out task and arm")
    parser.add_argument("--proposer", choices=("auto", "offline", "anthropic", "openai"), default="auto")
    parser.add_argument("--allow-upload", action="store_true")
    parser.add_argument("--model")
    parser.add_argument("--base-url")
    parser.add_argument("--spending-cap", type=float, default=20.0, metavar="USD")
    parser.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto")
    parser.add_argument("--workdir", type=Path, help="keep the workspaces here (default: a temporary folder)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "adapt_ablation.json")
    args = parser.parse_args(argv)

    from tritonsmith.evaluator.verify import mode_for_device

    options = RunOptions(tasks=None, workspace=Path("."), steps=args.steps, device=mode_for_device(args.device),
                         proposer=args.proposer, allow_upload=args.allow_upload, model=args.model,
                         base_url=args.base_url, spending_cap_usd=args.spending_cap, seed=args.seed)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tritonsmith-ablation-"))
    result = ablation(args.problems, held_out=args.held_out, seed=args.seed, options=options,
                      train_steps=args.train_steps, workdir=workdir,
                      progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(result["table"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out} (workspaces in {workdir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
