#!/usr/bin/env python3
"""Precision of tritonsmith on real Triton kernels.

Runs every builtin rule, at the Triton version each project targets, over the Triton kernels of
three public projects, and reports:

- per project: files, Python lines, kernels found by the analysis (and `@jit` lines found by
  grep, to spot kernels the index misses), findings by severity, warnings per 1,000 lines;
- every error-severity finding (the goal is none: these projects' kernels compile and run);
- the most frequent warning codes.

The repositories are not committed and this script fetches nothing. Get them once with:

    mkdir -p bench/.repos && cd bench/.repos
    git clone https://github.com/Dao-AILab/flash-attention && git -C flash-attention checkout <commit>
    git clone https://github.com/unslothai/unsloth && git -C unsloth checkout <commit>
    git clone https://github.com/pytorch-labs/applied-ai && git -C applied-ai checkout <commit>

(the commits are in PROJECTS below; `--print-setup` prints these commands). Only the subfolder
named in the table is read, so a sparse checkout or `git archive HEAD <subdir> | tar -x` works too.

Usage:

    .venv/bin/python bench/precision_real_code.py [--repos-dir bench/.repos] [--json OUT]
        [--fail-on-error] [--triton-version X.Y] [--all-versions] [--show-warnings N]

`--triton-version` overrides every project's version; `--all-versions` also checks each project at
every version of the range it supports (errors only are meaningful there: code that works on the
whole range must not get an error at any of its versions).
"""

from __future__ import annotations

import argparse
import ast
import json
import logging
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Project:
    name: str  # folder under --repos-dir
    repo: str  # GitHub owner/name
    subdir: str  # the Triton kernels, relative to the repository root
    triton: str  # the version we check at (MAJOR.MINOR)
    supported: tuple[str, ...]  # the versions the project supports, for --all-versions
    commit: str
    why: str  # how the version was chosen


PROJECTS: tuple[Project, ...] = (
    Project(
        name="flash-attention",
        repo="Dao-AILab/flash-attention",
        subdir="flash_attn/ops/triton",
        triton="3.6",
        supported=("3.2", "3.3", "3.4", "3.5", "3.6"),
        commit="0251105a2fb19d2957484b7f023cd8c115286ced",
        why=(
            "setup.py pins neither torch nor triton; the release wheels (.github/workflows/publish.yml) "
            "are built for torch 2.6.0, 2.7.1, 2.8.0, 2.9.1 and 2.10.0, i.e. Triton 3.2-3.6; checked at "
            "the newest, 3.6 (torch 2.10). No block pointers or descriptors in this folder."
        ),
    ),
    Project(
        name="unsloth",
        repo="unslothai/unsloth",
        subdir="unsloth/kernels",
        triton="3.6",
        supported=("3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6"),
        commit="015bdef0d94a241bcd94eec7a405b1700632180d",
        why=(
            "pyproject.toml asks for triton>=3.0.0; the newest CUDA extras are cuXXX-torch2100 "
            "(torch 2.10 -> Triton 3.6); checked at 3.6. The MoE kernels use tl.make_tensor_descriptor "
            "(3.4+), guarded by a hasattr check in autotuning.py."
        ),
    ),
    Project(
        name="applied-ai",
        repo="pytorch-labs/applied-ai",
        subdir="kernels/triton",
        triton="3.2",
        supported=("3.0", "3.1", "3.2", "3.3"),
        commit="4f8c39eb70d92e3848c65347ca077c8e723c74fd",
        why=(
            "no pins at all. The kernels were added Mar 2024 - Jan 2025 (last one: "
            "float8_groupwise_quant.py, Jan 2025, when torch 2.6 / Triton 3.2 was current). They use "
            "tl.make_block_ptr (< 3.9) and tl._experimental_descriptor_load (fp8/tma_gemm.py, Jul 2024; "
            "gone from 3.4), so the range is 3.0-3.3; checked at 3.2."
        ),
    ),
)

# A `@jit` / `@triton.jit` decorator line: the plain grep count.
_JIT_DECORATOR = re.compile(r"^\s*@\s*(?:triton\s*\.\s*)?jit\b")


def _is_jit(node: ast.expr) -> bool:
    """`jit`, `triton.jit`, or either called (`triton.jit(...)`); not `cute.jit` and the like."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id == "jit"
    return (isinstance(node, ast.Attribute) and node.attr == "jit" and isinstance(node.value, ast.Name)
            and node.value.id == "triton")


def _ast_jit_functions(text: str) -> tuple[list[tuple[str, int, bool]], list[tuple[str, int]]]:
    """(name, def line, nested in a function) of every jit-decorated def, and (name, line) of every
    `name = triton.jit(name)` re-binding, at any depth."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return [], []
    defs: list[tuple[str, int, bool]] = []
    rebinds: list[tuple[str, int]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(_is_jit(d) for d in child.decorator_list):
                    defs.append((child.name, child.lineno, in_function))
                visit(child, True)
                continue
            if (isinstance(child, ast.Assign) and isinstance(child.value, ast.Call) and _is_jit(child.value.func)
                    and child.value.args and isinstance(child.value.args[0], ast.Name)):
                rebinds.append((child.value.args[0].id, child.lineno))
            visit(child, in_function)

    visit(tree, False)
    return defs, rebinds


def parse_version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


@dataclass
class Result:
    project: Project
    version: str
    files: int = 0
    lines: int = 0
    kernels: int = 0
    jit_lines: int = 0  # grep count of `@jit` / `@triton.jit` lines (also counts ones in strings)
    jit_defs: int = 0  # functions with a jit decorator, found by the ast module at any depth
    jit_calls: int = 0  # `f = triton.jit(f)` re-bindings, found by the ast module
    kernel_names: list[str] = field(default_factory=list)
    by_severity: Counter = field(default_factory=Counter)
    by_code: dict[str, Counter] = field(default_factory=dict)  # severity -> code -> count
    findings: list[dict[str, Any]] = field(default_factory=list)
    discovery_gaps: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def warnings_per_kloc(self) -> float:
        return 1000.0 * self.by_severity["warning"] / self.lines if self.lines else 0.0


def make_matcher(version: str):  # type: ignore[no-untyped-def]
    from tritonsmith.rules import Matcher, load_rules, pack_paths

    rules = load_rules(pack_paths(None, include_user=False))
    for error in getattr(rules, "errors", []):
        print(f"warning: rule pack error: {error}", file=sys.stderr)
    return Matcher(rules, version=parse_version(version)), len(list(rules))


def check_project(project: Project, root: Path, version: str) -> Result:
    from tritonsmith.analysis import Document, index_module

    matcher, _ = make_matcher(version)
    result = Result(project, version)
    start = time.perf_counter()
    for path in sorted(root.rglob("*.py")):
        rel = f"{project.subdir}/{path.relative_to(root).as_posix()}"
        data = path.read_bytes()
        text = data.decode("utf-8", errors="replace")
        result.files += 1
        result.lines += len(text.splitlines())
        lines = text.splitlines()
        result.jit_lines += sum(1 for line in lines if _JIT_DECORATOR.match(line))
        jit_defs, rebinds = _ast_jit_functions(text)
        result.jit_defs += len(jit_defs)
        result.jit_calls += len(rebinds)
        index = index_module(Document(data).root)
        names = [k.name for k in index.kernels]
        result.kernels += len(names)
        result.kernel_names += [f"{rel}:{n}" for n in names]
        # What the index missed, against an independent count made with Python's ast module.
        indexed_rows = {k.node.start_point[0] + 1 for k in index.kernels}
        for name, row, nested in jit_defs:
            if row not in indexed_rows:
                where = "defined inside a function (made at run time)" if nested else "not indexed"
                result.discovery_gaps.append(f"{rel}:{row}: @jit def {name}: {where}")
        for name, row in rebinds:
            if name not in names:
                result.discovery_gaps.append(f"{rel}:{row}: `{name} = triton.jit({name})` re-binding not indexed")
        for finding in matcher.check_source(data):
            severity = finding.severity.value
            result.by_severity[severity] += 1
            result.by_code.setdefault(severity, Counter())[finding.code] += 1
            row, col = finding.span.start
            line_text = lines[row].strip() if row < len(lines) else ""
            result.findings.append(
                {
                    "file": rel,
                    "line": row + 1,
                    "column": col + 1,
                    "code": finding.code,
                    "name": finding.name,
                    "severity": severity,
                    "message": finding.message,
                    "source": line_text,
                }
            )
    result.seconds = time.perf_counter() - start
    return result


class _Crashes(logging.Handler):
    """Collects what tritonsmith logs at warning level and above, e.g. a check that raised."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        first = record.getMessage().splitlines()[0]
        if record.exc_info and record.exc_info[1] is not None:
            first += f": {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        self.records.append(first)


def cross_check_cli(result: Result, repos_dir: Path) -> str:
    """Run the CLI on the same folder and compare (file, line, code) of every finding."""
    import subprocess

    root = (repos_dir / result.project.name / result.project.subdir).resolve()
    command = [sys.executable, "-m", "tritonsmith", "check", "--format", "json",
               "--triton-version", result.version, str(root)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=root)
    try:
        items = json.loads(done.stdout or "[]")
    except json.JSONDecodeError:
        return f"could not read the CLI's output (exit {done.returncode}): {done.stderr.strip()[-300:]}"
    if isinstance(items, dict):  # tolerate a wrapped form, {"findings": [...]}
        items = items.get("findings", [])
    cli = Counter()
    for item in items:
        path = Path(item["path"])
        path = path if path.is_absolute() else (root / path)
        rel = f"{result.project.subdir}/{path.resolve().relative_to(root).as_posix()}"
        cli[(rel, item["start"]["line"], item["code"])] += 1
    ours = Counter((f["file"], f["line"], f["code"]) for f in result.findings)
    if cli == ours:
        return f"same {sum(ours.values())} findings (exit {done.returncode})"
    only_cli = sorted((cli - ours).elements())
    only_ours = sorted((ours - cli).elements())
    return f"DIFFERENT (exit {done.returncode}): only in CLI {only_cli[:10]}, only in-process {only_ours[:10]}"


def setup_commands(repos_dir: Path) -> str:
    lines = [f"mkdir -p {repos_dir} && cd {repos_dir}"]
    for p in PROJECTS:
        lines.append(
            f"git clone --filter=blob:none https://github.com/{p.repo} {p.name} && "
            f"git -C {p.name} checkout {p.commit}"
        )
    return "\n".join(lines)


def markdown_table(results: list[Result]) -> str:
    out = [
        "| repo | commit | Triton | files | lines | kernels | errors | warnings | warnings / 1k lines |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    total = Counter()
    for r in results:
        out.append(
            f"| {r.project.repo} (`{r.project.subdir}`) | `{r.project.commit[:10]}` | {r.version} | {r.files} "
            f"| {r.lines:,} | {r.kernels} | {r.by_severity['error']} | {r.by_severity['warning']} "
            f"| {r.warnings_per_kloc:.2f} |"
        )
        for key in ("files", "lines", "kernels"):
            total[key] += getattr(r, key)
        total["errors"] += r.by_severity["error"]
        total["warnings"] += r.by_severity["warning"]
    if len(results) > 1:
        per_kloc = 1000.0 * total["warnings"] / total["lines"] if total["lines"] else 0.0
        out.append(
            f"| **total** | | | {total['files']} | {total['lines']:,} | {total['kernels']} | {total['errors']} "
            f"| {total['warnings']} | {per_kloc:.2f} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos-dir", type=Path, default=HERE / ".repos")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the raw numbers and findings here")
    parser.add_argument("--fail-on-error", action="store_true", help="exit 1 on any error-severity finding")
    parser.add_argument("--triton-version", metavar="X.Y", help="check every project at this version")
    parser.add_argument(
        "--all-versions", action="store_true", help="also check each project at every version it supports"
    )
    parser.add_argument("--show-warnings", type=int, default=0, metavar="N",
                        help="list up to N warning findings per code (default 0: counts only)")
    parser.add_argument("--cross-check-cli", action="store_true",
                        help="also run `python -m tritonsmith check --format json` and compare its findings")
    parser.add_argument("--project", action="append", help="only these projects (by folder name)")
    parser.add_argument("--print-setup", action="store_true", help="print how to get the repositories and exit")
    args = parser.parse_args(argv)

    if args.print_setup:
        print(setup_commands(args.repos_dir))
        return 0

    projects = [p for p in PROJECTS if not args.project or p.name in args.project]
    missing = [p for p in projects if not (args.repos_dir / p.name / p.subdir).is_dir()]
    if missing:
        print(f"missing repositories under {args.repos_dir}: {', '.join(p.name for p in missing)}", file=sys.stderr)
        print("get them with:\n" + setup_commands(args.repos_dir), file=sys.stderr)
        return 2

    crashes = _Crashes()
    logging.getLogger("tritonsmith").addHandler(crashes)
    logging.getLogger("tritonsmith").propagate = False

    from tritonsmith.rules import load_rules, pack_paths

    rules = list(load_rules(pack_paths(None, include_user=False)))
    print(f"{len(rules)} builtin rules: {', '.join(sorted(r.code for r in rules))}\n")

    results: list[Result] = []
    for project in projects:
        version = args.triton_version or project.triton
        results.append(check_project(project, args.repos_dir / project.name / project.subdir, version))

    print("## Precision on real code\n")
    print(markdown_table(results))
    print()
    for r in results:
        print(f"- {r.project.repo}: Triton {r.version}: {r.project.why}")
    print()

    print("## Kernel discovery\n")
    print("| repo | kernels indexed | `@jit` lines (grep) | jit-decorated defs (ast) | `f = triton.jit(f)` (ast) |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r.project.repo} | {r.kernels} | {r.jit_lines} | {r.jit_defs} | {r.jit_calls} |")
    gaps = [g for r in results for g in r.discovery_gaps]
    print()
    print("Not indexed:" if gaps else "Every `@jit` line and `triton.jit(f)` re-binding was indexed.")
    for gap in gaps:
        print(f"- {gap}")
    print()

    errors = [(r, f) for r in results for f in r.findings if f["severity"] == "error"]
    print(f"## Error-severity findings ({len(errors)})\n")
    for r, f in errors:
        print(f"- {r.project.name}/{f['file']}:{f['line']}:{f['column']} {f['code']} ({f['name']}) {f['message']}")
        print(f"      `{f['source']}`")
    print()

    warnings = Counter()
    for r in results:
        warnings.update(r.by_code.get("warning", Counter()))
    print("## Warning codes, most frequent first\n")
    if not warnings:
        print("(none)")
    for code, count in warnings.most_common():
        name = next((f["name"] for r in results for f in r.findings if f["code"] == code), "")
        per_repo = ", ".join(
            f"{r.project.name} {r.by_code.get('warning', Counter())[code]}"
            for r in results if r.by_code.get("warning", Counter())[code]
        )
        print(f"- {code} {name}: {count} ({per_repo})")
        shown = 0
        for r in results:
            for f in r.findings:
                if f["code"] == code and f["severity"] == "warning" and shown < args.show_warnings:
                    print(f"    - {r.project.name}/{f['file']}:{f['line']} `{f['source']}`")
                    shown += 1
    if crashes.records:
        print(f"\n## tritonsmith logged {len(crashes.records)} problems (checks that raised)\n")
        for message, count in Counter(crashes.records).most_common():
            print(f"- {count}x {message}")
    info = sum(r.by_severity["information"] + r.by_severity["hint"] for r in results)
    print(f"\n{info} information/hint findings (not counted above).")

    if args.cross_check_cli:
        print("\n## Cross-check with the command line\n")
        for r in results:
            print(f"- {r.project.repo}: {cross_check_cli(r, args.repos_dir)}")

    range_results: list[Result] = []
    if args.all_versions:
        print("\n## Errors at every supported version\n")
        print("| repo | " + " | ".join(f"Triton {v}" for v in sorted({v for p in projects for v in p.supported},
                                                                          key=parse_version)) + " |")
        versions = sorted({v for p in projects for v in p.supported}, key=parse_version)
        print("|---|" + "---:|" * len(versions))
        for project in projects:
            cells = []
            for version in versions:
                if version not in project.supported:
                    cells.append("-")
                    continue
                rr = check_project(project, args.repos_dir / project.name / project.subdir, version)
                range_results.append(rr)
                cells.append(f"{rr.by_severity['error']} E / {rr.by_severity['warning']} W")
            print(f"| {project.repo} | " + " | ".join(cells) + " |")
        range_errors = [(r, f) for r in range_results for f in r.findings if f["severity"] == "error"]
        for r, f in range_errors:
            print(f"- Triton {r.version}: {r.project.name}/{f['file']}:{f['line']} {f['code']} {f['message']}")

    if args.json:
        def dump(r: Result) -> dict[str, Any]:
            return {
                "repo": r.project.repo,
                "subdir": r.project.subdir,
                "commit": r.project.commit,
                "triton": r.version,
                "files": r.files,
                "lines": r.lines,
                "kernels": r.kernels,
                "jit_decorator_lines": r.jit_lines,
                "jit_defs_ast": r.jit_defs,
                "jit_rebindings_ast": r.jit_calls,
                "discovery_gaps": r.discovery_gaps,
                "severity": dict(r.by_severity),
                "codes": {s: dict(c) for s, c in r.by_code.items()},
                "warnings_per_1000_lines": round(r.warnings_per_kloc, 3),
                "seconds": round(r.seconds, 3),
                "findings": r.findings,
            }

        payload = {
            "rules": sorted(r.code for r in rules),
            "results": [dump(r) for r in results],
            "all_versions": [dump(r) for r in range_results],
            "logged_problems": crashes.records,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"\nwrote {args.json}")

    if args.fail_on_error and (errors or any(f["severity"] == "error" for r in range_results for f in r.findings)):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
