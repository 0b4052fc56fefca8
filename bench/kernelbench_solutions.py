"""Verdicts of `tritonsmith verify --device cpu` on public KernelBench Triton solutions.

The corpus is not in this repository and this script fetches nothing: it is a folder of
KernelBench candidates (files with `class ModelNew`), each with its problem either in the same
file (`Model`, `get_inputs`, `get_init_inputs`) or in a sibling `<stem>_reference.py` (the layout
`tritonsmith.evaluator.specs.detect_kernelbench` understands), e.g.

    corpus/level2/l2_001_Conv2D_ReLU_BiasAdd.py            # the published solution, unchanged
    corpus/level2/l2_001_Conv2D_ReLU_BiasAdd_reference.py  # the KernelBench problem, unchanged
    corpus/manifest.json                                   # optional: where each file came from

For each candidate, one at a time, it runs

    python -m tritonsmith verify FILE --device cpu --no-timing --format json

in a fresh temporary folder holding a copy of the candidate and its reference (a `.tritonsmith/`
there is the workspace root, so no failure log or setting carries over from one file, or one
run, to the next; `--in-place` verifies the corpus files where they are instead), with a
wall-clock limit per file (`--timeout`, default 600 s; the whole process group is killed past
it), and records the exit status, the elapsed time and the verdict: `ok`, the `stage` that
failed (`compile` when a kernel failed to compile and correctness was not checked, else the
verdict's own stage: `static`, `reference`, `candidate`, `compare`, ...), the message, static
rejections, the sizes that ran, the notes and the work attribution when the evaluator gives one.
`--raw DIR` keeps each command's stdout and stderr; `--source DIR` runs another copy of the
package (e.g. a `git archive` of a commit, to measure it while the working tree is being edited).

`manifest.json` (optional) is `{"files": [{"file": "level2/x.py", "level": 2, "problem": ...,
"source_repo": ..., "source_path": ..., "source_commit": ...}, ...]}`; its fields are copied into
each outcome. `--labels FILE` (optional) is `{"level2/x.py": {"expect": "verify" | "reject",
"category": "...", "cause": "...", "note": "..."}, ...}`: the expected verdict decided by reading the solution (does
its Triton kernel compute the result, is the result right; `cause` says why when it should be
rejected). With labels the report counts *false rejections* (expected verify, rejected; by the
stage that failed) and *false accepts* (expected reject, verified), and right rejections by cause.

Usage::

    nice -n 19 .venv/bin/python bench/kernelbench_solutions.py /tmp/kb-corpus \\
        --json /tmp/kb-corpus/run.json --markdown /tmp/kb-corpus/run.md [--labels L.json] \\
        [--only level1] [--timeout 600] [--source DIR] [--raw DIR]

Run it on an otherwise idle machine, or niced as above: the verdicts do not depend on load, but a
file near the time limit might.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tritonsmith.evaluator.specs import detect_kernelbench  # noqa: E402

MESSAGE_CHARS = 2000  # kept per outcome in the JSON; the table shortens further


@dataclass
class Outcome:
    file: str  # relative to the corpus folder
    ok: bool
    stage: str  # "verified", "compile", "timeout", "crash", "no-spec", or the verdict's stage
    message: str
    elapsed: float  # seconds, wall clock, process start to exit
    returncode: int | None = None
    timed_out: bool = False
    rejections: list[str] = field(default_factory=list)
    compile_errors: list[str] = field(default_factory=list)
    sizes: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    work: Any = None  # the verdict's work attribution, when the evaluator gives one
    source: dict[str, Any] = field(default_factory=dict)  # from manifest.json
    label: dict[str, Any] = field(default_factory=dict)  # from --labels


def candidates(corpus: Path, only: list[str]) -> list[Path]:
    """Every file under `corpus` that detect_kernelbench takes for a candidate, in natural order."""
    found = []
    for path in sorted(corpus.rglob("*.py")):
        if path.name.endswith("_reference.py") or any(part.startswith(".") for part in path.relative_to(corpus).parts):
            continue
        relative = path.relative_to(corpus).as_posix()
        if only and not any(token in relative for token in only):
            continue
        if detect_kernelbench(path) is not None:
            found.append(path)
    return sorted(found, key=lambda p: _natural(p.relative_to(corpus).as_posix()))


def _natural(text: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe_rejection(rejection: Any) -> str:
    if isinstance(rejection, dict):
        line = rejection.get("line")
        what = rejection.get("message") or rejection.get("reason") or rejection.get("code") or json.dumps(rejection)
        code = rejection.get("code") or rejection.get("kind")
        return f"{code + ': ' if code and code not in str(what) else ''}{what}{f' (line {line})' if line else ''}"
    return str(rejection)


def parse(stdout: str) -> dict[str, Any]:
    """The fields of an outcome read from `verify --format json` output."""
    data = json.loads(stdout)
    if isinstance(data, list):  # no spec: only the compile listing
        return {"ok": False, "stage": "no-spec", "message": "no KernelBench spec found for this file"}
    kernels = data.get("kernels", [])
    compile_errors = []
    for kernel in kernels:
        if kernel.get("ok"):
            continue
        errors = [kernel.get("error")] if kernel.get("error") else []
        for result in kernel.get("results", []):
            if not result.get("ok"):
                errors.append(f"{result.get('target')} · {result.get('config')}: "
                              f"{result.get('error') or result.get('launch_error')}")
        findings = kernel.get("findings", [])
        errors += [f"{f.get('code')} line {f.get('line')}: {f.get('message')}" for f in findings if f.get("severity") == "error"]
        if not any(errors):  # not ok without an error: say which findings came with it
            errors = [f"{f.get('code')} [{f.get('severity')}] {f.get('message')}" for f in findings]
            errors = [f"not ok, no error given; findings: {'; '.join(errors)}" if errors else "not ok, no error or finding given"]
        compile_errors.append(f"{kernel.get('kernel')}: " + "; ".join(e for e in errors if e))
    verdicts = data.get("verification", [])
    if not verdicts:
        return {"ok": False, "stage": "compile", "compile_errors": compile_errors,
                "message": "correctness not checked: " + (" | ".join(compile_errors) or "no verdict and no compile error given")}
    ok = all(v.get("ok") for v in verdicts)
    failed = next((v for v in verdicts if not v.get("ok")), verdicts[0])
    rejections = [_describe_rejection(r) for v in verdicts for r in v.get("rejections") or []]
    message = failed.get("message") or failed.get("summary") or ""
    if rejections and not message:
        message = "rejected by static checks: " + "; ".join(rejections)
    return {"ok": ok, "stage": "verified" if ok else (failed.get("stage") or "unknown"), "message": message,
            "rejections": rejections, "compile_errors": compile_errors,
            "sizes": failed.get("sizes") or {}, "notes": list(failed.get("notes") or []),
            "work": failed.get("work") or failed.get("attribution")}


def _copy_pair(candidate: Path, folder: Path) -> Path:
    """Copy the candidate and its reference (when a sibling) into `folder`; the copy's path."""
    spec = detect_kernelbench(candidate)
    target = folder / candidate.name
    shutil.copyfile(candidate, target)
    if spec is not None and not spec.same_file:
        shutil.copyfile(spec.reference, folder / spec.reference.name)
    (folder / ".tritonsmith").mkdir(exist_ok=True)
    return target


_SCRATCH = re.compile(r"/tmp/(?:tritonsmith-runs-\d+/)?(?:ts-kb|tritonsmith-verify)-[^/\s'\"]+/(?:[^/\s'\"]+/(?:candidate|reference)/)?")
_TEMP = re.compile(r"/tmp/tmp[\w.-]+")
_SITE = re.compile(r"/[^\s'\"]*?/site-packages/")


def portable(text: str) -> str:
    """`text` without this machine's paths: the scratch folder a file was verified in (the
    file's own name remains), temporary files, and where packages are installed."""
    return _SITE.sub("<site-packages>/", _TEMP.sub("<tmp>", _SCRATCH.sub("", text)))


def run_one(candidate: Path, corpus: Path, *, timeout: float, in_place: bool, extra: list[str],
            env: dict[str, str] | None = None, raw: Path | None = None) -> Outcome:
    relative = candidate.relative_to(corpus).as_posix()
    with tempfile.TemporaryDirectory(prefix="ts-kb-") as tmp:
        path = candidate if in_place else _copy_pair(candidate, Path(tmp))
        command = [sys.executable, "-m", "tritonsmith", "verify", str(path), "--device", "cpu", "--no-timing",
                   "--format", "json", *extra]
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=path.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
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
    if raw is not None:  # the verify command's own output, for a closer look
        stem = raw / relative.removesuffix(".py")
        stem.parent.mkdir(parents=True, exist_ok=True)
        stem.with_suffix(".stdout.json").write_text(stdout or "")
        stem.with_suffix(".stderr.txt").write_text(stderr or "")
    if timed_out:
        return Outcome(file=relative, ok=False, stage="timeout", message=f"no verdict within {timeout:.0f} s",
                       elapsed=elapsed, returncode=process.returncode, timed_out=True)
    try:
        fields = parse(stdout)
    except (json.JSONDecodeError, AttributeError, TypeError) as error:
        tail = (stderr or stdout or "").strip().splitlines()[-8:]
        fields = {"ok": False, "stage": "crash",
                  "message": f"exit {process.returncode}, no JSON verdict ({error}): " + " / ".join(tail)}
    fields = json.loads(portable(json.dumps(fields)))
    fields["message"] = (fields.get("message") or "")[:MESSAGE_CHARS]
    if fields["ok"] and process.returncode != 0:  # should not happen; do not count it as verified
        fields.update(ok=False, stage="crash", message=f"verdict ok but exit {process.returncode}")
    return Outcome(file=relative, elapsed=elapsed, returncode=process.returncode, **fields)


def _level(outcome: Outcome) -> str:
    level = outcome.source.get("level")
    if level is None:
        first = outcome.file.split("/", 1)[0]
        level = first.removeprefix("level") if first.startswith("level") else "?"
    return str(level)


def _judgement(outcome: Outcome) -> str:
    expect = outcome.label.get("expect")
    if not expect:
        return ""
    if outcome.ok:
        return "ok (verified)" if expect == "verify" else "FALSE ACCEPT"
    if outcome.stage == "interpreter":  # NOT VERIFIED: an interpreter limitation, said to be one
        return "not verified (interpreter limitation)"
    return "FALSE REJECTION" if expect == "verify" else "ok (right rejection)"


def render(outcomes: list[Outcome], *, labelled: bool) -> str:
    lines = []
    by_level: dict[str, Counter] = {}
    for o in outcomes:
        by_level.setdefault(_level(o), Counter())["verified" if o.ok else "rejected"] += 1
    lines += ["| level | files | verified | rejected |", "|---|---:|---:|---:|"]
    for level in sorted(by_level):
        c = by_level[level]
        lines.append(f"| {level} | {sum(c.values())} | {c['verified']} | {c['rejected']} |")
    total = Counter("verified" if o.ok else "rejected" for o in outcomes)
    lines.append(f"| all | {len(outcomes)} | {total['verified']} | {total['rejected']} |")
    lines += ["", "| stage | files |", "|---|---:|"]
    lines += [f"| {stage} | {n} |" for stage, n in Counter(o.stage for o in outcomes).most_common()]
    if labelled:
        judged = [o for o in outcomes if o.label.get("expect")]
        lines += ["", "| judgement (against --labels) | files |", "|---|---:|"]
        lines += [f"| {j} | {n} |" for j, n in Counter(_judgement(o) for o in judged).most_common()]
        false = Counter(o.stage for o in judged if _judgement(o) == "FALSE REJECTION")
        if false:
            lines += ["", "| false rejections by the stage that failed | files |", "|---|---:|"]
            lines += [f"| {stage} | {n} |" for stage, n in false.most_common()]
        accepts = [o.file for o in judged if _judgement(o) == "FALSE ACCEPT"]
        if accepts:
            lines += ["", "False accepts: " + ", ".join(accepts)]
        right = Counter(o.label.get("category") or o.label.get("cause") or "?"
                        for o in judged if _judgement(o) == "ok (right rejection)")
        if right:
            lines += ["", "| right rejections by cause | files |", "|---|---:|"]
            lines += [f"| {cause} | {n} |" for cause, n in right.most_common()]
    header = "| # | file | level | verdict | stage | s | message |"
    rule = "|---:|---|---|---|---|---:|---|"
    if labelled:
        header = "| # | file | level | verdict | stage | s | expected | judgement | cause | message |"
        rule = "|---:|---|---|---|---|---:|---|---|---|---|"
    lines += ["", header, rule]
    for n, o in enumerate(outcomes, 1):
        verdict = "verified" if o.ok else "rejected"
        message = _shorten(o.message, 220).replace("|", "\\|")
        cells = [str(n), o.file, _level(o), verdict, o.stage, f"{o.elapsed:.0f}"]
        if labelled:
            cells += [o.label.get("expect", ""), _judgement(o), (o.label.get("cause") or "").replace("|", "\\|")]
        cells.append(message)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _git(*args: str, cwd: Path = ROOT) -> str:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def main() -> None:
    parser = argparse.ArgumentParser(description="tritonsmith verify --device cpu on a folder of KernelBench solutions")
    parser.add_argument("corpus", help="folder of KernelBench candidates (with manifest.json, optionally)")
    parser.add_argument("--timeout", type=float, default=600.0, help="wall-clock seconds per file (default 600)")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="only files whose relative path contains TEXT (repeatable)")
    parser.add_argument("--labels", help="expected verdicts: {file: {expect: verify|reject, cause, note}}")
    parser.add_argument("--json", metavar="OUT", help="write every outcome and the run's context as JSON")
    parser.add_argument("--markdown", metavar="OUT", help="also write the Markdown report to OUT")
    parser.add_argument("--in-place", action="store_true",
                        help="verify the corpus files where they are (their folder becomes the workspace)")
    parser.add_argument("--verify-arg", action="append", default=[], metavar="ARG",
                        help="extra argument for `tritonsmith verify` (repeatable), e.g. --verify-arg=--trials=5")
    parser.add_argument("--raw", metavar="DIR", help="keep each verify command's stdout and stderr under DIR")
    parser.add_argument("--source", metavar="DIR",
                        help="run the tritonsmith package found in DIR (a checkout, or a copy such as `git archive REV | "
                             "tar -x -C DIR`, with the commit in DIR/.commit and `git status --short` in DIR/.status) "
                             "instead of this repository's")
    args = parser.parse_args()

    corpus = Path(args.corpus).resolve()
    manifest = {}
    if (corpus / "manifest.json").is_file():
        manifest = {entry["file"]: entry for entry in json.loads((corpus / "manifest.json").read_text()).get("files", [])}
    labels = json.loads(Path(args.labels).read_text()) if args.labels else {}
    files = candidates(corpus, args.only)
    if not files:
        raise SystemExit(f"no KernelBench candidate under {corpus}")
    env = None
    if args.source:
        source = Path(args.source).resolve()
        if not (source / "tritonsmith" / "__init__.py").is_file():
            raise SystemExit(f"--source {source}: no tritonsmith package there")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(source), os.environ.get("PYTHONPATH")) if p)}
        head = _git("rev-parse", "HEAD", cwd=source) or (
            (source / ".commit").read_text().strip() if (source / ".commit").is_file() else "")
        status = _git("status", "--short", cwd=source) if (source / ".git").exists() else (
            (source / ".status").read_text() if (source / ".status").is_file() else "")
    else:
        head, status = _git("rev-parse", "HEAD"), _git("status", "--short")
    load_before = os.getloadavg()
    started = time.perf_counter()
    outcomes = []
    for n, path in enumerate(files, 1):
        outcome = run_one(path, corpus, timeout=args.timeout, in_place=args.in_place, extra=args.verify_arg, env=env,
                          raw=Path(args.raw) if args.raw else None)
        relative = outcome.file
        outcome.source = {k: v for k, v in manifest.get(relative, {}).items() if k != "file"}
        outcome.label = labels.get(relative, {})
        outcomes.append(outcome)
        print(f"# [{n}/{len(files)}] {relative}: {'verified' if outcome.ok else 'REJECTED'} "
              f"({outcome.stage}, {outcome.elapsed:.0f} s) {_shorten(outcome.message, 160)}", file=sys.stderr, flush=True)
    total = time.perf_counter() - started
    load = os.getloadavg()
    try:
        from importlib.metadata import version

        versions = f"triton {version('triton')}, torch {version('torch')}"
    except Exception:
        versions = "triton/torch versions unknown"
    context = (f"tritonsmith at {head[:12] or 'unknown'}{' with uncommitted changes' if status else ''}"
               f"{f' (from {args.source})' if args.source else ''}; "
               f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, {versions}; "
               f"load average {load_before[0]:.2f} before, {load[0]:.2f} after; {total:.0f} s for {len(files)} files "
               f"(timeout {args.timeout:.0f} s each)")
    report = f"{render(outcomes, labelled=bool(labels))}\n\n{context}\n"
    print(report)
    if args.markdown:
        Path(args.markdown).write_text(report)
    if args.json:
        Path(args.json).write_text(json.dumps({
            "corpus": corpus.name, "tritonsmith_source": "a copy given by --source" if args.source else "this checkout",
            "git_head": head, "git_status_short": status.splitlines(),
            "command": "python -m tritonsmith verify FILE --device cpu --no-timing --format json " + " ".join(args.verify_arg),
            "timeout_s": args.timeout, "in_place": args.in_place, "elapsed_s": total, "loadavg": [load_before, load],
            "cpus": os.cpu_count(), "python": platform.python_version(), "versions": versions,
            "outcomes": [asdict(o) for o in outcomes],
        }, indent=1))


if __name__ == "__main__":
    main()
