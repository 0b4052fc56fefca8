#!/usr/bin/env python3
"""Type probes: how many of Triton's compile errors the static checker flags before compiling.

`bench/type_probes/` holds small kernels, one per file, each a failing variant of a type or
shape error (a `tl.dot` with mismatched operands, a reduction over an axis the block does not
have, a bitcast between widths, ...) or a near miss of one that compiles. Each file has a header
comment the labeller reads:

    # probe: class=dot-small-dim; intent=fail; kernel=NAME; signature: a_ptr=*fp16, n=i32; constexprs: BLOCK_K=8

`intent` is what the probe was written to do; the label is what the compiler did.

Label (compiles every probe for sm_90 and sm_80, one subprocess per probe, minutes):

    nice -n 10 .venv/bin/python bench/type_probes.py --label [--jobs 2] [--timeout 300]

writes `docs/benchmarks/type-probes/labels.json`: per file and target, ok or the exception (type
and first line of the message) and the lines of the probe file the compiler's error points at
(`CompilationError.node.lineno`, relative to the `def` line of the jit function whose source is
`CompilationError.src`, mapped back to the file; outermost first: a call of a helper, then the
line inside the helper). A probe fails when any target fails. No GPU is needed.

Measure (seconds; reads the labels, compiles nothing):

    .venv/bin/python bench/type_probes.py [--json OUT] [--triton-version X.Y]

runs the checker the way `tritonsmith check --format json` does (the same `Workspace`, from the
same settings, and its `check_source`) on every probe and counts, per error class:

* failing probes with an ERROR finding on a line the compiler names (recall at the line);
* failing probes with an ERROR finding anywhere in their jit functions (recall in the kernel);
* compiling probes with any ERROR finding anywhere in the file (false alarms, listed).

Then prints a Markdown table and, with `--json`, writes every probe's label, findings and
classification with the versions, the date and the command.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROBES_DIR = HERE / "type_probes"
LABELS = ROOT / "docs" / "benchmarks" / "type-probes" / "labels.json"
TARGETS = ("sm_90", "sm_80")

_HEADER = re.compile(r"^# probe: (?P<keys>.*?); signature: (?P<sig>.*?); constexprs: (?P<cx>.*)$", re.M)


@dataclass(frozen=True)
class Header:
    cls: str
    intent: str
    kernel: str
    signature: dict[str, str]  # parameter -> Triton type string ("*fp16", "i32", "fp32")
    constexprs: dict[str, Any]  # parameter -> value
    line: int  # 1-based line of the header comment


def parse_header(text: str) -> Header | None:
    """The `# probe:` comment of a probe file, or None when there is none or it is malformed."""
    match = _HEADER.search(text)
    if match is None:
        return None
    keys = dict(item.strip().partition("=")[::2] for item in match["keys"].split(";") if "=" in item)
    if not {"class", "intent", "kernel"} <= keys.keys() or keys["intent"] not in ("fail", "compile"):
        return None
    signature = dict(_pairs(match["sig"]))
    try:
        constexprs = {k: ast.literal_eval(v) for k, v in _pairs(match["cx"])}
    except (ValueError, SyntaxError):
        return None
    line = text.count("\n", 0, match.start()) + 1
    return Header(keys["class"], keys["intent"], keys["kernel"], signature, constexprs, line)


def _pairs(text: str) -> list[tuple[str, str]]:
    text = text.strip()
    if text in ("", "-"):
        return []
    out = []
    for item in text.split(","):
        name, _, value = item.strip().partition("=")
        out.append((name.strip(), value.strip()))
    return out


def probe_files(folder: Path | None = None) -> list[Path]:
    folder = folder or PROBES_DIR
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def jit_function_spans(source: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of every function decorated with triton.jit (1-based)."""
    spans = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and any(_is_jit(d) for d in node.decorator_list):
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            spans.append((node.name, first, node.end_lineno or node.lineno))
    return spans


def _is_jit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Attribute) and target.attr == "jit") or (
        isinstance(target, ast.Name) and target.id == "jit")


# ---------------------------------------------------------------------------------------------
# labelling: compile one probe (in a child process)


def _first_line(text: str) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def _compile_one(path: Path, targets: list[str]) -> dict[str, Any]:
    """Compile the probe's kernel for each target; the result per target. Runs in a child."""
    import importlib.util

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler.errors import CompilationError

    text = path.read_text()
    header = parse_header(text)
    if header is None:
        raise SystemExit(f"{path}: no probe header")
    spec = importlib.util.spec_from_file_location(f"_probe_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = getattr(module, header.kernel)
    jit_fns = {}  # source text -> (name, file line of `def`)
    for name, value in vars(module).items():
        src = getattr(value, "_src", None)
        if isinstance(src, str) and hasattr(value, "def_file_line_number"):
            jit_fns[src] = (name, value.def_file_line_number)
    signature = {}
    for name in kernel.arg_names:
        if name in header.constexprs:
            signature[name] = "constexpr"
        elif name in header.signature:
            signature[name] = header.signature[name]
        else:
            raise SystemExit(f"{path}: parameter {name} is neither in the signature nor a constexpr")
    results: dict[str, Any] = {}
    for target in targets:
        capability = int(target.removeprefix("sm_"))
        started = time.perf_counter()
        # MLIR and ptxas write their diagnostics to fd 2: keep them per target.
        with tempfile.TemporaryFile(mode="w+b") as err, _redirect_fd2(err):
            try:
                triton.compile(
                    triton.compiler.ASTSource(fn=kernel, signature=dict(signature), constexprs=dict(header.constexprs)),
                    target=GPUTarget("cuda", capability, 32),
                )
                error: BaseException | None = None
            except Exception as exc:  # every compiler error is a label
                error = exc
            sys.stderr.flush()
            err.seek(0)
            stderr = err.read().decode("utf-8", "replace")
        seconds = round(time.perf_counter() - started, 3)
        if error is None:
            results[target] = {"ok": True, "seconds": seconds}
            continue
        chain = []  # outermost first
        seen: set[int] = set()
        current: BaseException | None = error
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            chain.append(current)
            current = current.__cause__ or current.__context__
        lines = []
        for exc in chain:
            if isinstance(exc, CompilationError) and exc.src in jit_fns and hasattr(exc.node, "lineno"):
                name, def_line = jit_fns[exc.src]
                line = def_line + exc.node.lineno - 1
                if not lines or lines[-1]["line"] != line:
                    lines.append({"line": line, "function": name, "column": exc.node.col_offset + 1})
        if not lines:  # an MLIR diagnostic carries the file location in its text
            for found in re.finditer(re.escape(path.name) + r'"?:(\d+):(\d+)', str(error) + "\n" + stderr):
                lines.append({"line": int(found[1]), "function": None, "column": int(found[2])})
                break
        # the message: the innermost error that says something
        message = ""
        for exc in reversed(chain):
            text_ = exc.error_message if isinstance(exc, CompilationError) else str(exc)
            if text_ and _first_line(text_):
                message = _first_line(text_)
                break
        root = chain[-1]
        # an MLIR verifier error only says "error encountered during parsing": keep its diagnostic
        diagnostic = next((line.split("error:", 1)[1].strip()[:300] for line in stderr.splitlines()
                           if "error:" in line), None)
        results[target] = {
            "ok": False,
            "exception": type(error).__name__,
            "cause": type(root).__name__ if root is not error else None,
            "message": message or _first_line(stderr),
            "diagnostic": diagnostic,
            "line": lines[-1]["line"] if lines else None,
            "lines": lines,
            "seconds": seconds,
        }
    return results


@contextlib.contextmanager
def _redirect_fd2(handle: Any):
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(handle.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _run_child(path: Path, targets: list[str], timeout: float, env: dict[str, str]) -> dict[str, Any]:
    """Compile one probe in a child process; a crash or a timeout is a label too."""
    command = [sys.executable, str(Path(__file__).resolve()), "--compile-one", str(path), "--targets",
               ",".join(targets)]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {t: {"ok": False, "exception": "Timeout", "cause": None,
                    "message": f"no result within {timeout:g} s", "line": None, "lines": []} for t in targets}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                return json.loads(line)
    if len(targets) > 1:  # one target crashed the process: find out which, one by one
        out: dict[str, Any] = {}
        for target in targets:
            out.update(_run_child(path, [target], timeout, env))
        return out
    signal = -proc.returncode if proc.returncode < 0 else None
    return {targets[0]: {
        "ok": False, "exception": f"crash (signal {signal})" if signal else f"crash (exit {proc.returncode})",
        "cause": None, "message": _first_line("\n".join(proc.stderr.strip().splitlines()[-3:])),
        "line": None, "lines": [], "stderr_tail": proc.stderr[-2000:],
    }}


def label(args: argparse.Namespace) -> int:
    import triton

    files = probe_files()
    if args.only:
        files = [p for p in files if any(s in p.name for s in args.only)]
    targets = list(TARGETS)
    previous: dict[str, Any] = {"probes": {}, "meta": {}}
    if args.only and LABELS.exists():
        previous = json.loads(LABELS.read_text())
    started = time.perf_counter()
    today = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory(prefix="type-probes-cache-") as cache:
        env = dict(os.environ, TRITON_CACHE_DIR=cache, TRITON_DEFAULT_FP_FUSION="1", PYTHONWARNINGS="ignore")
        env.pop("TRITON_INTERPRET", None)
        done = 0

        def one(path: Path) -> tuple[Path, dict[str, Any]]:
            return path, _run_child(path, targets, args.timeout, env)

        labels = {k: v for k, v in previous["probes"].items() if (PROBES_DIR / k).exists()}
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for path, results in pool.map(one, files):
                done += 1
                header = parse_header(path.read_text())
                assert header is not None
                ok = all(r["ok"] for r in results.values())
                labels[path.name] = {
                    "class": header.cls, "intent": header.intent, "label": "compiles" if ok else "fails",
                    "sha256": sha256(path), "labelled": today, "targets": results,
                }
                shown = "ok" if ok else "; ".join(
                    f"{t}: {r['exception']} at {r.get('line')}: {r['message'][:80]}" for t, r in results.items()
                    if not r["ok"])
                print(f"[{done}/{len(files)}] {path.name}: {shown}", flush=True)
    run = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python", "bench/type_probes.py", *sys.argv[1:]]),
        "triton": triton.__version__, "python": platform.python_version(),
        "probes": len(files), "seconds": round(time.perf_counter() - started, 1),
    }
    old_meta = previous["meta"]
    old_runs = old_meta.get("runs") or ([{k: old_meta.get(k) for k in ("date", "command", "triton", "python")}]
                                        if old_meta.get("date") else [])
    for entry in labels.values():
        entry.setdefault("labelled", old_meta.get("date"))
    out = {
        "meta": {
            **{k: run[k] for k in ("triton", "python", "date", "command")},
            "targets": targets,
            "how": "triton.compile(ASTSource(fn, signature, constexprs), target=GPUTarget('cuda', CC, 32)), "
                   "one subprocess per probe, an empty TRITON_CACHE_DIR per run",
            # --only relabels some probes and keeps the others: every run, oldest first
            "runs": [*old_runs, run],
        },
        "probes": dict(sorted(labels.items())),
    }
    LABELS.parent.mkdir(parents=True, exist_ok=True)
    LABELS.write_text(json.dumps(out, indent=1) + "\n")
    counts = Counter(v["label"] for v in labels.values())
    print(f"wrote {LABELS.relative_to(ROOT)}: {dict(counts)} ({len(files)} compiled in {run['seconds']} s)")
    return 0


# ---------------------------------------------------------------------------------------------
# measuring


def _workspace(triton_version: str | None, first: Path) -> Any:
    """The checker as `tritonsmith check` builds it (settings from pyproject, packs, version)."""
    from tritonsmith.settings import Settings, find_workspace_root, read_pyproject
    from tritonsmith.workspace import Workspace

    root = find_workspace_root(first)
    warnings: list[str] = []
    flags = {"triton_version": triton_version} if triton_version else {}
    settings = Settings.merged(read_pyproject(root, warnings=warnings), flags, warnings=warnings)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return Workspace(root, settings)


def compiler_lines(entry: dict[str, Any]) -> set[int]:
    """Every probe-file line any target's error names (a helper's call site and the line in it)."""
    return {loc["line"] for r in entry["targets"].values() if not r["ok"] for loc in r.get("lines", [])}


def classify(entry: dict[str, Any], findings: list[dict[str, Any]], spans: list[tuple[str, int, int]]) -> str:
    errors = [f for f in findings if f["severity"] == "error"]
    if entry["label"] == "compiles":
        return "false-alarm" if errors else "clean"
    lines = compiler_lines(entry)
    in_kernel = [f for f in errors if any(first <= f["line"] <= last for _, first, last in spans)]
    if any(f["line"] in lines for f in errors):
        return "caught-at-line"
    if in_kernel:
        return "caught-in-kernel"
    if errors:
        return "caught-outside-kernel"  # only in the launcher
    return "missed"


def measure(args: argparse.Namespace) -> int:
    if not LABELS.exists():
        print(f"no {LABELS.relative_to(ROOT)}: run with --label first", file=sys.stderr)
        return 2
    labels = json.loads(LABELS.read_text())
    files = probe_files()
    import tritonsmith

    workspace = _workspace(args.triton_version, files[0] if files else PROBES_DIR)
    shared = _workspace(args.triton_version, files[0] if files else PROBES_DIR)
    version = ".".join(map(str, workspace.version))
    started = time.perf_counter()
    rows = []
    problems = []
    cache_discrepancies = []
    for path in files:
        entry = labels["probes"].get(path.name)
        if entry is None:
            problems.append(f"{path.name}: not labelled (run --label)")
            continue
        if entry["sha256"] != sha256(path):
            problems.append(f"{path.name}: changed since it was labelled (run --label --only {path.stem})")
        source = path.read_bytes()
        # Each probe on its own: the matcher caches findings per kernel text and launch-call text,
        # and many probes share both while their launchers allocate other dtypes, so one matcher
        # over the whole folder (as `tritonsmith check bench/type_probes` does) answers some
        # probes with another probe's findings. That run is made too, and its differences listed.
        workspace.reload()
        findings = [
            {"code": f.code, "line": f.span.start[0] + 1, "severity": f.severity.value, "message": f.message}
            for f in workspace.check_source(source)
        ]
        in_folder = [(f.code, f.span.start[0] + 1) for f in shared.check_source(source)]
        if sorted(in_folder) != sorted((f["code"], f["line"]) for f in findings):
            cache_discrepancies.append({"file": path.name, "alone": [[f["code"], f["line"]] for f in findings],
                                        "in_one_run_over_the_folder": [list(f) for f in in_folder]})
        spans = jit_function_spans(source.decode())
        rows.append({
            "file": path.name, "class": entry["class"], "intent": entry["intent"], "label": entry["label"],
            "compiler": {t: {k: r.get(k) for k in ("ok", "exception", "cause", "message", "diagnostic", "line", "lines")
                             if k in r} for t, r in entry["targets"].items()},
            "compiler_lines": sorted(compiler_lines(entry)),
            "kernel_lines": [[first, last] for _, first, last in spans],
            "findings": findings,
            "classification": classify(entry, findings, spans),
        })
    seconds = time.perf_counter() - started
    stale = set(labels["probes"]) - {p.name for p in files}
    problems += [f"{name}: labelled but no such probe file" for name in sorted(stale)]

    per_class: dict[str, dict[str, Any]] = {}
    for row in rows:
        c = per_class.setdefault(row["class"], Counter())
        c["probes"] += 1
        c[row["label"]] += 1
        c[row["classification"]] += 1
        c["intent-" + row["intent"]] += 1
    def totals(rows_: list[dict[str, Any]]) -> dict[str, Any]:
        failing = [r for r in rows_ if r["label"] == "fails"]
        compiling = [r for r in rows_ if r["label"] == "compiles"]
        at_line = sum(r["classification"] == "caught-at-line" for r in failing)
        in_kernel = at_line + sum(r["classification"] == "caught-in-kernel" for r in failing)
        false_alarms = sum(r["classification"] == "false-alarm" for r in compiling)
        return {
            "probes": len(rows_), "fails": len(failing), "compiles": len(compiling),
            "flagged_at_compiler_line": at_line, "flagged_in_kernel": in_kernel,
            "flagged_only_outside_kernel": sum(r["classification"] == "caught-outside-kernel" for r in failing),
            "missed": sum(r["classification"] == "missed" for r in failing),
            "false_alarms": false_alarms,
            "recall_at_line": round(at_line / len(failing), 4) if failing else None,
            "recall_in_kernel": round(in_kernel / len(failing), 4) if failing else None,
            "false_alarm_rate": round(false_alarms / len(compiling), 4) if compiling else None,
            "no_compiler_line": sum(not r["compiler_lines"] for r in failing),
        }

    classes = sorted(per_class)
    summary = {"all": totals(rows), "classes": {c: totals([r for r in rows if r["class"] == c]) for c in classes}}
    false_alarms = [
        {"file": r["file"], "class": r["class"],
         "codes": sorted({f["code"] for f in r["findings"] if f["severity"] == "error"}),
         "findings": [f for f in r["findings"] if f["severity"] == "error"]}
        for r in rows if r["classification"] == "false-alarm"
    ]
    surprises = [{"file": r["file"], "intent": r["intent"], "label": r["label"]} for r in rows
                 if (r["intent"] == "fail") != (r["label"] == "fails")]
    codes_on_failures = Counter(f["code"] for r in rows if r["label"] == "fails"
                                for f in r["findings"] if f["severity"] == "error")

    print(_markdown(summary, false_alarms, version, seconds))
    if cache_discrepancies:
        print(f"\nnote: checked in one run over the folder (one matcher, as the CLI does), "
              f"{len(cache_discrepancies)} probes get other findings than when checked alone "
              "(the per-kernel cache key omits the launcher's allocations); see cache_discrepancies")
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    if args.json:
        out = {
            "meta": {
                "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "command": " ".join(["python", "bench/type_probes.py", *sys.argv[1:]]),
                "python": platform.python_version(),
                "triton_installed": _installed("triton"),
                "triton_checked_against": version,
                "tritonsmith": getattr(tritonsmith, "__version__", None),
                "tritonsmith_git": _git_state(),
                "rules_loaded": len(list(workspace.rules)),
                "labels": {k: labels["meta"].get(k) for k in ("triton", "python", "date", "command", "targets", "runs")},
                "check_seconds": round(seconds, 3),
                "definitions": {
                    "fails": "the compiler raised for at least one of the targets (labels.json)",
                    "flagged_at_compiler_line": "an ERROR finding starts on a line the compiler's error names "
                                                "(any target; for a helper, its call site or the line in it)",
                    "flagged_in_kernel": "an ERROR finding starts anywhere in the probe's @triton.jit "
                                         "functions (includes the at-line ones)",
                    "false_alarm": "a probe that compiles for every target has an ERROR finding anywhere",
                },
            },
            "summary": summary,
            "false_alarms": false_alarms,
            "error_codes_on_failing_probes": dict(codes_on_failures.most_common()),
            "intent_vs_label": surprises,
            "cache_discrepancies": cache_discrepancies,
            "problems": problems,
            "probes": rows,
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
        print(f"\nwrote {args.json}")
    return 1 if problems and args.strict else 0


def _git_state() -> dict[str, Any]:
    """The commit checked, and whether tritonsmith/ had uncommitted changes (the checker measured)."""
    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT, timeout=30,
                                  check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    changed = git("status", "--porcelain", "--", "tritonsmith")
    tree = hashlib.sha256()
    for path in sorted((ROOT / "tritonsmith").rglob("*")):
        if path.is_file() and path.suffix in (".py", ".toml", ".json"):
            tree.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return {"head": git("rev-parse", "HEAD"),
            "tritonsmith_uncommitted_files": None if changed is None else len(changed.splitlines()),
            "tritonsmith_files_sha256": tree.hexdigest()}


def _installed(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "–"


def _markdown(summary: dict[str, Any], false_alarms: list[dict[str, Any]], version: str, seconds: float) -> str:
    out = [f"Static checker (rules for Triton {version}) on {summary['all']['probes']} type probes "
           f"({seconds:.2f} s):", "",
           "| class | probes | fail | compile | flagged at compiler's line | flagged in kernel | false alarms |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for name, t in [*summary["classes"].items(), ("**all**", summary["all"])]:
        out.append(f"| {name} | {t['probes']} | {t['fails']} | {t['compiles']} | "
                   f"{_pct(t['flagged_at_compiler_line'], t['fails'])} | {_pct(t['flagged_in_kernel'], t['fails'])} | "
                   f"{_pct(t['false_alarms'], t['compiles'])} |")
    if false_alarms:
        out += ["", "False alarms (compile on sm_90 and sm_80, yet an ERROR finding):", ""]
        out += [f"- {fa['file']}: " + ", ".join(f"{f['code']} line {f['line']}" for f in fa["findings"])
                for fa in false_alarms]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", action="store_true", help="compile every probe and write labels.json")
    parser.add_argument("--only", action="append", help="with --label: only probes whose name contains this "
                                                        "(repeatable); the other labels are kept")
    parser.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per probe (child process)")
    parser.add_argument("--json", help="measure: write every probe's label, findings and classification here")
    parser.add_argument("--triton-version", help="measure: check against these rules (default: as the CLI)")
    parser.add_argument("--strict", action="store_true", help="measure: exit 1 when labels are missing or stale")
    parser.add_argument("--probes", help="the probe folder (default: bench/type_probes; the held-out set is "
                                         "bench/type_probes_holdout)")
    parser.add_argument("--labels", help="the labels file (default: docs/benchmarks/type-probes/labels.json)")
    parser.add_argument("--compile-one", help=argparse.SUPPRESS)
    parser.add_argument("--targets", default=",".join(TARGETS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    global PROBES_DIR, LABELS
    if args.probes:
        PROBES_DIR = Path(args.probes).resolve()
    if args.labels:
        LABELS = Path(args.labels).resolve()
    if args.compile_one:
        results = _compile_one(Path(args.compile_one), args.targets.split(","))
        sys.stdout.write("\n" + json.dumps(results) + "\n")
        return 0
    if args.label:
        return label(args)
    return measure(args)


if __name__ == "__main__":
    sys.exit(main())
