"""Calibrate and check the predicted GPU time against real GPU measurements: kernels from the
AdaExplore project's published KernelBench level-2 search trajectories (github.com/StigLidu/AdaExplore,
`web/showcase/kb-l2-p<N>-200.json`), each timed there on an NVIDIA RTX A6000, predicted here by
`tritonsmith predict` for the same GPU (sm_86) and compared by rank.

Why these kernels: bench/predictor_rank.py ranks variants of the suite's own kernels, written here
and moved one knob at a time. These were written elsewhere, by an LLM-driven search, and differ in
everything at once: GEMMs left to torch or written with `tl.dot`, `@triton.autotune`, algebraic
rewrites that skip most of the work, runtimes spread over two orders of magnitude within a problem.
A predictor that orders them as the GPU did is one a search can trust on code it did not write.

The split: only problems 18, 29, 40, 42 and 44 (the calibration split) are used. Every other
problem (63, 70, 83, 84, 92 in the showcase, and any other) is held out to check the calibrated
model once, at the end: this script refuses them (a hard-coded allow-list, checked before any file
is read) and reads no file of theirs.

Nothing of AdaExplore is copied into this repository: `corpus` reads a local clone (`--repo`, a bare
git directory is enough) at run time and writes the kernels to a folder outside it.

Units: the upstream field `runtime_us` is in *milliseconds*, despite its name. AdaExplore's
src/eval.py times each trial with `torch.cuda.Event.elapsed_time` (milliseconds) and keeps the mean
(three significant figures, so measured times tie often), web/build_run_data.py copies that mean
into `runtime_us`, web/app.js shows it as "ms", and each step's `baseline_time_us` equals the mean
of results/timing/A6000/baseline_time_torch.json, which eval.py documents as milliseconds. The
manifest keeps `runtime_us` verbatim and adds `measured_ms`, the same number named for its unit.
The timing is of the whole `ModelNew.forward` (torch ops and launch gaps included, no L2 flush).

Usage::

    # 1. the corpus (no GPU, no network): K kernels per problem, spread over the measured range
    .venv/bin/python bench/predict_calibration.py corpus --repo <a clone of StigLidu/AdaExplore> \\
        --out /tmp/calib [--per-problem 16] [--seed 0] [--problems 18,29,40,42,44]
    # 2. the predictions, one fresh process and folder per file (niced: other jobs share the machine)
    nice -n 19 .venv/bin/python bench/predict_calibration.py run /tmp/calib --target sm_86 \\
        --json /tmp/calib/run-1.json [--timeout 600] [--only p18]
    # 3. rank agreement per problem, the median over problems, pooled; runs side by side
    .venv/bin/python bench/predict_calibration.py report run-1.json run-2.json --markdown calib.md
    # 4. the host's constants (predict.py HOST_*) chosen on problems 18, 29, 40; 42 and 44 checked
    .venv/bin/python bench/predict_calibration.py fit run-1.json --fit-problems 18,29,40

`corpus` takes, per problem, the steps whose kernel was correct and timed (`score.correct`,
`runtime_us > 0`), keeps the first step of each distinct code, sorts them by measured time and picks
K: the fastest, the slowest, and one at random (seeded per problem) from each of K-2 equal-count
bins between them, so the picks follow the search's own spread of runtimes. Each pick is written as
`OUT/p<N>/s<step>.py` (the code unchanged) beside `OUT/p<N>/s<step>_reference.py` (the problem's
`reference_src` unchanged), the layout `tritonsmith.evaluator.specs.detect_kernelbench` reads.
`OUT/manifest.json` says where each came from (repository, commit, JSON path, step, node), what
was measured (and on which GPU), the code's sha1 and the problem's PyTorch baseline on that GPU.
Its `files` entries have the fields bench/kernelbench_solutions.py reads from a manifest, so that
script can verify the same corpus.

`run` runs `python -m tritonsmith predict FILE --target T --format json` for each file in a fresh
temporary folder holding copies of the file and its reference and an empty `.tritonsmith/` (so no
setting or log carries over from one file to the next), kills the whole process group past
`--timeout`, and records the wall time, the exit status and the JSON (or the end of stderr). The
run JSON is rewritten after every file, so a run cut short keeps what it did.

`report`, per problem: the files with a finite prediction, those predicted unable to launch
(infinite time) and those with no prediction; Spearman's rho between predicted and measured time
(average ranks for ties; an infinite prediction ranks slowest; files with no prediction are left
out of rho but counted); whether the kernel predicted fastest is in the measured fastest quarter
of the problem's files; the median predicted/measured ratio (the calibration factor). Then the
median rho over problems and the same figures pooled over every file. Given several runs it shows
each run's figures side by side, with the spread (max - min) of each rho.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from predictor_rank import spearman  # noqa: E402  (one rank correlation for both benches)

from tritonsmith.evaluator.specs import detect_kernelbench  # noqa: E402

# The calibration split. Everything else is held out; never widen this to look at a held-out problem.
ALLOWED = (18, 29, 40, 42, 44)
LEVEL = 2
SOURCE_REPO = "github.com/StigLidu/AdaExplore"
SHOWCASE = "web/showcase/kb-l2-p{problem}-200.json"
TIMING = "results/timing"
STDERR_LINES = 20  # kept per failed file in the run JSON


class HeldOut(ValueError):
    """A problem outside the calibration split was asked for."""


def check_problem(problem: int) -> int:
    """`problem` when it is in the calibration split; HeldOut otherwise, before anything is read."""
    if problem not in ALLOWED:
        raise HeldOut(f"problem {problem} is held out: only the calibration split "
                      f"{', '.join(map(str, ALLOWED))} may be used (63, 70, 83, 84, 92 and every other "
                      "problem are kept unseen for the final check)")
    return problem


def parse_problems(text: str) -> list[int]:
    """`18,29,p40` as [18, 29, 40], each checked against the allow-list."""
    problems = []
    for token in text.replace(" ", "").split(","):
        if not token:
            continue
        try:
            problem = int(token.removeprefix("p"))
        except ValueError:
            raise ValueError(f"not a problem number: {token!r}") from None
        problems.append(check_problem(problem))
    if not problems:
        raise ValueError("no problem given")
    return sorted(set(problems))


# --- reading the mirror --------------------------------------------------------------------------


def _git(*args: str, git_dir: Path | None = None, cwd: Path = ROOT) -> str:
    prefix = ["git", "--git-dir", str(git_dir)] if git_dir is not None else ["git"]
    return subprocess.run([*prefix, *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def showcase_path(problem: int) -> str:
    """The trajectory's path in the AdaExplore repository; only for a problem of the split."""
    return SHOWCASE.format(problem=check_problem(problem))


def read_showcase(repo: Path, commit: str, problem: int) -> dict[str, Any]:
    return json.loads(_git("show", f"{commit}:{showcase_path(problem)}", git_dir=repo))


def timing_folder(hardware: str, folders: list[str]) -> str | None:
    """The results/timing folder of a GPU name ("NVIDIA RTX A6000" -> "A6000"), the longest that
    ends the name, or None."""
    matches = [folder for folder in folders if hardware.endswith(folder)]
    return max(matches, key=len) if matches else None


def baseline_entry(table: dict[str, Any], problem: int) -> tuple[str, dict[str, Any]] | None:
    """(KernelBench file name, timing) of `problem` in a baseline_time_torch.json table. The table
    holds every problem; only the entry of a problem of the split is looked at."""
    check_problem(problem)
    for name, entry in table.get(f"level{LEVEL}", {}).items():
        if name.split("_", 1)[0] == str(problem):
            return name, entry
    return None


def read_baseline(repo: Path, commit: str, hardware: str | None, problem: int) -> dict[str, Any] | None:
    """The PyTorch baseline of `problem` on the GPU named `hardware`, when AdaExplore has one."""
    if not hardware:
        return None
    folders = [line.rsplit("/", 1)[-1] for line in _git("ls-tree", "--name-only", commit, f"{TIMING}/",
                                                         git_dir=repo).split()]
    folder = timing_folder(hardware, folders)
    if folder is None:
        return None
    path = f"{TIMING}/{folder}/baseline_time_torch.json"
    found = baseline_entry(json.loads(_git("show", f"{commit}:{path}", git_dir=repo)), problem)
    if found is None:
        return None
    name, entry = found
    return {"source_path": path, "kernelbench_file": name, "same_gpu": entry.get("hardware") == hardware,
            **entry}


# --- choosing the kernels ------------------------------------------------------------------------


def _measured(step: dict[str, Any]) -> float | None:
    runtime = step.get("runtime_us")
    if isinstance(runtime, bool) or not isinstance(runtime, (int, float)) or not runtime > 0:
        return None
    return float(runtime)


def eligible(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps whose kernel was correct and timed, the first step of each distinct code, in
    step order (a search re-evaluates the same code; one kernel must not count twice)."""
    seen: set[str] = set()
    out = []
    for step in sorted(steps, key=lambda s: s["step"]):
        code = step.get("code") or ""
        if not (step.get("score") or {}).get("correct") or _measured(step) is None or not code:
            continue
        if code in seen:
            continue
        seen.add(code)
        out.append(step)
    return out


def select(pool: list[dict[str, Any]], k: int, rng: random.Random) -> list[dict[str, Any]]:
    """K steps spread over the measured range, fastest first: the fastest, the slowest and one drawn
    from each of K-2 equal-count bins of the rest sorted by time; all of them when K covers the pool.
    Equal-count (quantile) bins, not equal-width ones: runtimes are skewed (a few slow outliers),
    and equal-width bins between them would be mostly empty."""
    ranked = sorted(pool, key=lambda s: (_measured(s), s["step"]))
    if len(ranked) <= k:
        return ranked
    if k < 2:
        raise ValueError("K must be at least 2: the fastest and the slowest are always kept")
    inner, bins = ranked[1:-1], k - 2
    picks = [ranked[0]]
    for i in range(bins):  # len(inner) >= K - 1 > bins, so no bin is empty
        picks.append(rng.choice(inner[i * len(inner) // bins:(i + 1) * len(inner) // bins]))
    picks.append(ranked[-1])
    return picks


def problem_rng(seed: int, problem: int) -> random.Random:
    """One generator per problem, so the picks of one problem do not depend on which others are built."""
    return random.Random(seed * 1_000_003 + problem)


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


# --- corpus --------------------------------------------------------------------------------------


def file_entry(step: dict[str, Any], problem: int, commit: str, baseline: dict[str, Any] | None) -> dict[str, Any]:
    """A manifest row for one chosen step (the file names are relative to the corpus folder)."""
    stem = f"p{problem}/s{step['step']:03d}"
    return {"file": f"{stem}.py", "reference": f"{stem}_reference.py", "level": LEVEL, "problem": problem,
            "step": step["step"], "node_id": step.get("node_id"),
            "runtime_us": step["runtime_us"],  # verbatim upstream; milliseconds in fact (module docstring)
            "measured_ms": _measured(step), "fast_p": (step.get("score") or {}).get("fast_p"),
            "baseline_time_us": step.get("baseline_time_us"),
            "baseline_torch_mean": baseline.get("mean") if baseline else None,
            "hardware": step.get("hardware"), "source_repo": SOURCE_REPO, "source_commit": commit,
            "source_path": showcase_path(problem), "code_sha1": _sha1(step["code"]),
            "autotuned": "triton.autotune" in step["code"],
            # some candidates are torch only (no Triton kernel at all): nothing for a predictor to see
            "triton_kernels": step["code"].count("triton.jit")}


def write_problem(out: Path, problem: int, reference: str, picks: list[dict[str, Any]]) -> None:
    folder = out / f"p{problem}"
    folder.mkdir(parents=True)
    for step in picks:
        stem = f"s{step['step']:03d}"
        (folder / f"{stem}.py").write_text(step["code"], encoding="utf-8")
        (folder / f"{stem}_reference.py").write_text(reference, encoding="utf-8")


def check_layout(out: Path, entry: dict[str, Any]) -> bool:
    """Whether tritonsmith finds the file's problem; True when the candidate carries its own `Model`
    and inputs (then detect_kernelbench reads those, not the sibling)."""
    spec = detect_kernelbench(out / entry["file"])
    if spec is None:
        raise RuntimeError(f"{entry['file']}: detect_kernelbench finds no KernelBench problem for it")
    return spec.same_file


def build_corpus(repo: Path, out: Path, problems: list[int], k: int, seed: int) -> dict[str, Any]:
    for problem in problems:  # all refused before the first read, not midway
        check_problem(problem)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty: give a new folder (old picks would mix with new ones)")
    out.mkdir(parents=True, exist_ok=True)
    commit = _git("rev-parse", "HEAD", git_dir=repo).strip()
    summary: dict[str, Any] = {}
    files: list[dict[str, Any]] = []
    for problem in problems:
        data = read_showcase(repo, commit, problem)
        steps = data["steps"]
        timed = [s for s in steps if (s.get("score") or {}).get("correct") and _measured(s) is not None]
        pool = eligible(steps)
        picks = select(pool, k, problem_rng(seed, problem))
        hardware = sorted({str(s["hardware"]) for s in picks if s.get("hardware")})
        if len(hardware) > 1:  # the ranks compare times; times from two GPUs do not compare
            raise RuntimeError(f"problem {problem}: kernels timed on several GPUs: {hardware}")
        baseline = read_baseline(repo, commit, hardware[0] if hardware else None, problem)
        write_problem(out, problem, data["reference_src"], picks)
        entries = [file_entry(step, problem, commit, baseline) for step in picks]
        for entry in entries:
            entry["reference_in_file"] = check_layout(out, entry)
        files += entries
        times = [float(s["runtime_us"]) for s in pool]  # eligible: all timed
        summary[str(problem)] = {
            "label": data.get("label"), "source_path": showcase_path(problem), "steps": len(steps),
            "correct_and_timed": len(timed), "eligible": len(pool), "chosen": len(picks),
            "measured_ms_range": [min(times), max(times)] if times else None,
            "chosen_ms_range": [_measured(picks[0]), _measured(picks[-1])] if picks else None,
            "hardware": hardware[0] if hardware else None, "baseline_torch": baseline,
            "reference_sha1": _sha1(data["reference_src"])}
    manifest = {
        "source_repo": SOURCE_REPO, "source_commit": commit, "level": LEVEL,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(_portable(sys.argv)), "per_problem": k, "seed": seed, "problems": summary,
        "units": "runtime_us, baseline_time_us and baseline_torch are milliseconds (AdaExplore src/eval.py "
                 "records torch.cuda.Event.elapsed_time means); measured_ms is runtime_us under its real unit",
        "files": files}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


# --- run -----------------------------------------------------------------------------------------


def corpus_entries(corpus: Path, only: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The manifest and its files whose path contains one of `only` (all without), each checked
    against the allow-list: a corpus built by hand cannot slip a held-out problem in."""
    manifest = json.loads((corpus / "manifest.json").read_text())
    for entry in manifest["files"]:
        check_problem(int(entry["problem"]))
    return manifest, [e for e in manifest["files"] if not only or any(token in e["file"] for token in only)]


def strict_json(value: Any) -> Any:
    """`value` with infinite and NaN floats as the strings "Infinity", "-Infinity", "NaN", so the
    run JSON stays standard JSON (other tools than Python's json refuse a bare Infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strict_json(v) for v in value]
    return value


def parse_output(stdout: str) -> dict[str, Any] | None:
    """The predict command's JSON object, or None when stdout is not one."""
    try:
        data = json.loads(stdout)
    except (json.JSONDecodeError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def outcome(entry: dict[str, Any], *, returncode: int | None, elapsed: float, timed_out: bool, stdout: str,
            stderr: str, scratch: str) -> dict[str, Any]:
    """One file's row of the run JSON: where it came from and what the command said."""
    result = None if timed_out else parse_output(stdout.replace(scratch, "<tmp>"))  # paths name no machine
    row = {k: entry.get(k) for k in ("file", "problem", "step", "node_id", "measured_ms", "runtime_us",
                                      "hardware", "code_sha1", "autotuned", "triton_kernels", "reference_in_file")}
    row.update(returncode=returncode, elapsed_s=round(elapsed, 3), timed_out=timed_out, result=strict_json(result))
    if result is None or returncode != 0:  # the scratch folder's name differs per run: drop it
        row["stderr_tail"] = [line.replace(scratch, "<tmp>") for line in (stderr or "").splitlines()[-STDERR_LINES:]]
        if result is None and stdout.strip():
            row["stdout_head"] = stdout[:2000].replace(scratch, "<tmp>")
    return row


def predict_one(corpus: Path, entry: dict[str, Any], *, target: str, timeout: float,
                env: dict[str, str]) -> dict[str, Any]:
    """Run the predict command on one corpus file, isolated in a fresh folder."""
    with tempfile.TemporaryDirectory(prefix="ts-calib-") as tmp:
        folder = Path(tmp)
        candidate = folder / Path(entry["file"]).name
        shutil.copyfile(corpus / entry["file"], candidate)
        shutil.copyfile(corpus / entry["reference"], folder / Path(entry["reference"]).name)
        (folder / ".tritonsmith").mkdir()  # the workspace root: nothing carries over between files
        command = [sys.executable, "-m", "tritonsmith", "predict", str(candidate), "--target", target,
                   "--format", "json"]
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, start_new_session=True, env=env)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # the CLI and the workers it started
            stdout, stderr = process.communicate()
        elapsed = time.perf_counter() - started
        return outcome(entry, returncode=process.returncode, elapsed=elapsed, timed_out=timed_out,
                       stdout=stdout or "", stderr=stderr or "", scratch=tmp)


def machine() -> dict[str, Any]:
    try:
        from importlib.metadata import version

        versions = {name: version(name) for name in ("triton", "torch")}
    except Exception:
        versions = {}
    return {"platform": platform.platform(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "versions": versions, "loadavg": list(os.getloadavg())}


def _portable(argv: list[str]) -> list[str]:
    """The command line as recorded: absolute paths (this machine's) shown by their last part."""
    return [f"<{Path(a).name}>" if Path(a).is_absolute() else a for a in argv]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = Path(args.corpus).resolve()
    manifest, entries = corpus_entries(corpus, args.only)
    if not entries:
        raise SystemExit(f"no corpus file under {corpus} matches {args.only}")
    out = Path(args.json) if args.json else corpus / f"run-{datetime.now():%Y%m%d-%H%M%S}.json"
    # this checkout's package, the one whose commit is recorded, whatever the venv has installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    data: dict[str, Any] = {
        "kind": "predict_calibration run", "corpus": corpus.name, "source_repo": manifest.get("source_repo"),
        "source_commit": manifest.get("source_commit"), "target": args.target, "timeout_s": args.timeout,
        "command": " ".join([Path(sys.executable).name, *_portable(sys.argv)]),
        "predict_command": f"python -m tritonsmith predict FILE --target {args.target} --format json",
        "git_head": _git("rev-parse", "HEAD").strip(), "git_status_short": _git("status", "--short").splitlines(),
        "machine_before": machine(), "started": _now(), "finished": None, "rows": []}
    for n, entry in enumerate(entries, 1):
        row = predict_one(corpus, entry, target=args.target, timeout=args.timeout, env=env)
        data["rows"].append(row)
        data["finished"] = _now()
        out.write_text(json.dumps(data, indent=1) + "\n")  # a run cut short keeps its rows
        seconds = predicted_seconds(row)
        print(f"# [{n}/{len(entries)}] {row['file']}: predicted {seconds} s, measured {row['measured_ms']} ms, "
              f"exit {row['returncode']}, {row['elapsed_s']:.0f} s", file=sys.stderr, flush=True)
    data["machine_after"] = machine()
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return data


# --- report --------------------------------------------------------------------------------------


def predicted_seconds(row: dict[str, Any]) -> float | None:
    """The predicted total time of a run row: a positive float, inf when the kernel is predicted
    unable to launch, None when there is no prediction."""
    result = row.get("result")
    if not isinstance(result, dict):
        return None
    seconds = result.get("seconds")
    if isinstance(seconds, str):  # strict_json's "Infinity", or a command that prints "inf"
        try:
            seconds = float(seconds)
        except ValueError:
            return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return None
    if math.isnan(seconds) or seconds <= 0:
        return None
    return float(seconds)


def fastest_in_quarter(pairs: list[tuple[float | None, float]]) -> bool | None:
    """Whether the kernel predicted fastest is among the measured fastest quarter of all the files,
    predicted or not (fewer than ceil(n/4) files measured strictly faster); None with no finite
    prediction. `pairs`: (predicted seconds or None, measured time) per file."""
    finite = [(p, m) for p, m in pairs if p is not None and math.isfinite(p)]
    if not finite:
        return None
    best = min(p for p, _ in finite)
    pick = max(m for p, m in finite if p == best)  # a tied prediction gives no reason to choose: the worst
    faster = sum(1 for _, m in pairs if m < pick)
    return faster < math.ceil(len(pairs) / 4)


def figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The report's figures for a set of run rows (one problem's, or all)."""
    pairs = [(predicted_seconds(r), float(r["measured_ms"])) for r in rows]
    ranked = [(p, m) for p, m in pairs if p is not None]
    finite = [(p, m) for p, m in ranked if math.isfinite(p)]
    ratios = [p / (m / 1000.0) for p, m in finite]  # predicted s over measured s
    return {"files": len(rows), "finite": len(finite), "cannot_launch": len(ranked) - len(finite),
            "no_prediction": len(pairs) - len(ranked),
            "not_verified": sum(1 for r in rows if isinstance(r.get("result"), dict)
                                and r["result"].get("verified") is False),
            "spearman": spearman([p for p, _ in ranked], [m for _, m in ranked]),
            "fastest_in_quarter": fastest_in_quarter(pairs),
            "median_ratio": statistics.median(ratios) if ratios else None}


def summarize(run_data: dict[str, Any]) -> dict[str, Any]:
    """Per-problem figures of one run, the median rho over problems and the pooled figures."""
    rows = run_data["rows"]
    for row in rows:
        check_problem(int(row["problem"]))
    problems = {p: figures([r for r in rows if int(r["problem"]) == p]) for p in sorted({int(r["problem"]) for r in rows})}
    rhos = [f["spearman"] for f in problems.values() if f["spearman"] is not None]
    hits = [f["fastest_in_quarter"] for f in problems.values() if f["fastest_in_quarter"] is not None]
    return {"problems": problems, "median_spearman": statistics.median(rhos) if rhos else None,
            "fastest_in_quarter_problems": [sum(hits), len(hits)], "pooled": figures(rows)}


# --- fit: the host's constants -------------------------------------------------------------------

HOST_GRID = {
    "call_s": [0.0, 10e-6, 20e-6, 40e-6, 60e-6],
    "launch_s": [x * 1e-6 for x in range(0, 62, 2)],
    "op_s": [x * 1e-6 for x in (0, 0.5, 1, 1.5, 2, 3, 4, 5, 6, 8, 10, 12)],
}
"""The values `fit` tries for predict.py's HOST_CALL_S, HOST_LAUNCH_S and HOST_OP_S."""


def host_parts(row: dict[str, Any]) -> tuple[float, int, int] | None:
    """(the GPU's predicted time, Triton launches, PyTorch operators) of a run row, or None."""
    result = row.get("result")
    if not isinstance(result, dict) or result.get("device_seconds") is None:
        return None
    device = float(result["device_seconds"])
    return (device if math.isfinite(device) else math.inf), len(result.get("launches") or []), \
        int(result.get("host_ops") or 0)


def refit(rows: list[dict[str, Any]], call_s: float, launch_s: float, op_s: float) -> list[dict[str, Any]]:
    """The rows with each prediction's total recomputed under other host constants."""
    out = []
    for row in rows:
        parts = host_parts(row)
        if parts is None:
            out.append(row)
            continue
        device, launches, ops = parts
        total = max(device, call_s + launches * launch_s + ops * op_s)
        out.append({**row, "result": {**row["result"], "seconds": total}})
    return out


def fit(run_data: dict[str, Any], fit_problems: list[int]) -> dict[str, Any]:
    """The host constants that order the fit problems' kernels best (the median per-problem rho,
    then the mean, then the median |log(predicted / measured)|), and the figures of every problem
    under them; the other problems of the run are the check half, never used to choose."""
    rows = run_data["rows"]
    chosen = [r for r in rows if int(r["problem"]) in fit_problems]

    def score(values: tuple[float, float, float]) -> tuple[float, float, float]:
        summary = summarize({"rows": refit(chosen, *values)})
        rhos = [f["spearman"] for f in summary["problems"].values() if f["spearman"] is not None]
        ratios = [abs(math.log(f["median_ratio"])) for f in summary["problems"].values() if f["median_ratio"]]
        return (statistics.median(rhos) if rhos else -1.0, statistics.mean(rhos) if rhos else -1.0,
                -statistics.median(ratios) if ratios else -math.inf)

    grid = [(call, launch, op) for call in HOST_GRID["call_s"] for launch in HOST_GRID["launch_s"]
            for op in HOST_GRID["op_s"]]
    best = max(grid, key=score)
    return {"fit_problems": fit_problems, "call_s": best[0], "launch_s": best[1], "op_s": best[2],
            "score": score(best), "summary": summarize({"rows": refit(rows, *best)})}


def _number(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def _yes(value: bool | None) -> str:
    return "–" if value is None else ("yes" if value else "no")


def _spread(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    return _number(max(known) - min(known)) if len(known) == len(values) and known else "–"


def render(names: list[str], runs: list[dict[str, Any]], summaries: list[dict[str, Any]]) -> str:
    """The Markdown report: one row per problem, then the median over problems and the pooled row;
    with several runs each cell gives every run's figure (run 1 / run 2 ...) and each rho has its
    own column, with the spread."""
    several = len(summaries) > 1
    rho_heads = [f"ρ run {i}" for i in range(1, len(summaries) + 1)] if several else ["ρ"]
    heads = ["problem", "files", *rho_heads, *(["ρ spread"] if several else []), "predicted fastest in measured ¼",
             "finite", "cannot launch", "no prediction", "not verified", "median predicted ÷ measured"]
    lines = ["| " + " | ".join(heads) + " |", "|---|" + "---:|" * (len(heads) - 1)]

    def row(label: str, each: list[dict[str, Any]]) -> str:
        rhos = [f["spearman"] for f in each]
        cells = [label, " / ".join(str(f["files"]) for f in each), *[_number(r) for r in rhos]]
        if several:
            cells.append(_spread(rhos))
        cells += [" / ".join(_yes(f["fastest_in_quarter"]) for f in each),
                  *[" / ".join(str(f[key]) for f in each) for key in ("finite", "cannot_launch", "no_prediction",
                                                                       "not_verified")],
                  " / ".join(_ratio(f["median_ratio"]) for f in each)]
        return "| " + " | ".join(cells) + " |"

    problems = sorted({p for s in summaries for p in s["problems"]})
    empty = {"files": 0, "finite": 0, "cannot_launch": 0, "no_prediction": 0, "not_verified": 0, "spearman": None,
             "fastest_in_quarter": None, "median_ratio": None}
    for problem in problems:
        lines.append(row(f"L2 {problem}", [s["problems"].get(problem, empty) for s in summaries]))
    medians = [s["median_spearman"] for s in summaries]
    hit = " / ".join(f"{s['fastest_in_quarter_problems'][0]} of {s['fastest_in_quarter_problems'][1]}" for s in summaries)
    cells = ["median over problems", "", *[_number(m) for m in medians], *([_spread(medians)] if several else []), hit]
    lines.append("| " + " | ".join(cells + [""] * (len(heads) - len(cells))) + " |")
    lines.append(row("pooled", [s["pooled"] for s in summaries]))
    notes = ["", "ρ: Spearman's rank correlation of predicted and measured time (average ranks for ties; "
             "a kernel predicted unable to launch ranks slowest; files with no prediction are left out of ρ but "
             "counted). Measured: AdaExplore's timing on an NVIDIA RTX A6000, ms. Ratio: predicted s ÷ measured s "
             "over the finite predictions.", ""]
    for i, (name, data) in enumerate(zip(names, runs), 1):
        box = data.get("machine_before") or {}
        notes.append(f"Run {i}: {name}, target {data.get('target')}, tritonsmith at {(data.get('git_head') or '?')[:12]}"
                     f"{' with uncommitted changes' if data.get('git_status_short') else ''}, {data.get('started')} "
                     f"to {data.get('finished')}, {box.get('cpus', '?')} CPUs, load {(box.get('loadavg') or ['?'])[0]}; "
                     f"corpus from {data.get('source_repo')} at {(data.get('source_commit') or '?')[:12]}.")
    return "\n".join(lines + notes) + "\n"


def report(paths: list[Path], markdown: Path | None) -> str:
    runs = [json.loads(path.read_text()) for path in paths]
    text = render([path.name for path in paths], runs, [summarize(data) for data in runs])
    if markdown is not None:
        markdown.write_text(text)
    return text


# --- command line --------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("corpus", help="write K kernels per problem and manifest.json to --out")
    build.add_argument("--repo", required=True, type=Path, help="AdaExplore clone (its git directory will do)")
    build.add_argument("--out", required=True, type=Path, help="a new or empty folder, outside this repository")
    build.add_argument("--per-problem", type=int, default=16, metavar="K", help="kernels per problem (default 16)")
    build.add_argument("--seed", type=int, default=0)
    build.add_argument("--problems", default=",".join(map(str, ALLOWED)),
                       help=f"comma-separated, of the calibration split only (default {','.join(map(str, ALLOWED))})")
    predict = commands.add_parser("run", help="tritonsmith predict on every corpus file")
    predict.add_argument("corpus", help="a folder written by `corpus`")
    predict.add_argument("--target", default="sm_86", help="GPU target (default sm_86: the RTX A6000 measured)")
    predict.add_argument("--timeout", type=float, default=600.0, help="wall-clock seconds per file (default 600)")
    predict.add_argument("--json", metavar="OUT", help="the run JSON (default CORPUS/run-<time>.json)")
    predict.add_argument("--only", action="append", default=[], metavar="TEXT",
                         help="only files whose path contains TEXT, e.g. p18 (repeatable)")
    shown = commands.add_parser("report", help="rank agreement per problem and pooled, runs side by side")
    shown.add_argument("runs", nargs="+", type=Path, help="run JSON files")
    shown.add_argument("--markdown", type=Path, metavar="OUT", help="also write the report to OUT")
    fitted = commands.add_parser("fit", help="choose the host constants on some problems, show all")
    fitted.add_argument("run", type=Path, help="a run JSON file")
    fitted.add_argument("--fit-problems", default="18,29,40", help="the problems to choose by (default 18,29,40)")
    args = parser.parse_args(argv)
    try:
        if args.command == "fit":
            result = fit(json.loads(args.run.read_text()), parse_problems(args.fit_problems))
            print(f"HOST_CALL_S={result['call_s'] * 1e6:g} µs, HOST_LAUNCH_S={result['launch_s'] * 1e6:g} µs, "
                  f"HOST_OP_S={result['op_s'] * 1e6:g} µs (score {result['score']})")
            for problem, figure in result["summary"]["problems"].items():
                half = "fit" if problem in result["fit_problems"] else "check"
                print(f"p{problem} ({half}): rho {_number(figure['spearman'])}, fastest in measured quarter "
                      f"{_yes(figure['fastest_in_quarter'])}, median predicted/measured {_ratio(figure['median_ratio'])}")
        elif args.command == "corpus":
            if args.per_problem < 2:
                parser.error("--per-problem must be at least 2 (the fastest and the slowest)")
            try:
                problems = parse_problems(args.problems)
            except ValueError as error:  # HeldOut included: refused before the mirror is opened
                parser.error(str(error))
            manifest = build_corpus(args.repo.resolve(), args.out.resolve(), problems, args.per_problem, args.seed)
            for problem, info in manifest["problems"].items():
                print(f"p{problem}: {info['eligible']} eligible, {info['chosen']} chosen, "
                      f"{info['measured_ms_range'][0]}-{info['measured_ms_range'][1]} ms measured")
            print(f"wrote {len(manifest['files'])} kernels and manifest.json to {args.out}")
        elif args.command == "run":
            run(args)
        else:
            print(report(args.runs, args.markdown), end="")
    except (HeldOut, FileExistsError) as error:
        raise SystemExit(f"error: {error}") from None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
