"""The type-probe set (bench/type_probes/) and its labels: every probe has a readable header that
matches its kernel, and docs/benchmarks/type-probes/labels.json labels every probe as it is now
(by content hash), with both labels represented. Nothing is compiled here; the labels come from
`bench/type_probes.py --label`."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_bench_type_probes", ROOT / "bench" / "type_probes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up while the class is built
    spec.loader.exec_module(module)
    return module


bench = _load_bench()
FILES = bench.probe_files()


@pytest.fixture(scope="module")
def labels() -> dict:
    assert bench.LABELS.exists(), "run `.venv/bin/python bench/type_probes.py --label`"
    return json.loads(bench.LABELS.read_text())


def test_there_are_enough_probes() -> None:
    assert len(FILES) >= 150


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_probe_has_a_docstring_and_a_header_matching_its_kernel(path: Path) -> None:
    text = path.read_text()
    tree = ast.parse(text)
    assert ast.get_docstring(tree), "the file starts with a docstring saying what it probes"
    header = bench.parse_header(text)
    assert header is not None, "no `# probe: class=...; intent=...; kernel=...; signature: ...; constexprs: ...`"
    kernels = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    assert header.kernel in kernels, f"no function {header.kernel}"
    kernel = kernels[header.kernel]
    assert any(bench._is_jit(d) for d in kernel.decorator_list), "the kernel is not @triton.jit"
    params = [a.arg for a in kernel.args.args]
    assert set(params) == set(header.signature) | set(header.constexprs), "header and parameters differ"
    assert not set(header.signature) & set(header.constexprs)
    for name, ty in header.signature.items():
        assert ty.lstrip("*") in {"fp16", "bf16", "fp32", "fp64", "i8", "u8", "i16", "i32", "i64"}, (name, ty)
    assert "launch" in kernels, "no launch() launcher"


def test_labels_cover_every_probe_as_it_is_now(labels: dict) -> None:
    names = {p.name for p in FILES}
    probes = labels["probes"]
    assert names - probes.keys() == set(), "probes without a label: run --label"
    assert probes.keys() - names == set(), "labels of probes that no longer exist"
    stale = sorted(p.name for p in FILES if probes[p.name]["sha256"] != bench.sha256(p))
    assert stale == [], "probes changed since labelling: run --label --only NAME"


def test_labels_are_consistent_and_both_present(labels: dict) -> None:
    probes = labels["probes"]
    for name, entry in probes.items():
        assert set(entry["targets"]) == set(bench.TARGETS), name
        ok = all(r["ok"] for r in entry["targets"].values())
        assert entry["label"] == ("compiles" if ok else "fails"), name
        header = bench.parse_header((bench.PROBES_DIR / name).read_text())
        assert header is not None and entry["class"] == header.cls, name
    counts = {label: sum(e["label"] == label for e in probes.values()) for label in ("fails", "compiles")}
    assert counts["fails"] > 0 and counts["compiles"] > 0, counts
    for cls in {e["class"] for e in probes.values()}:
        assert any(e["class"] == cls for e in probes.values())
    assert labels["meta"]["triton"] and labels["meta"]["python"] and labels["meta"]["date"]


def test_classify_counts_a_finding_at_the_compilers_line() -> None:
    entry = {"label": "fails", "targets": {"sm_90": {"ok": False, "lines": [{"line": 12}, {"line": 7}]},
                                           "sm_80": {"ok": True}}}
    spans = [("helper", 6, 8), ("kernel", 10, 14)]
    error = {"severity": "error", "code": "X"}
    assert bench.classify(entry, [{**error, "line": 7}], spans) == "caught-at-line"  # the line in the helper
    assert bench.classify(entry, [{**error, "line": 13}], spans) == "caught-in-kernel"
    assert bench.classify(entry, [{**error, "line": 20}], spans) == "caught-outside-kernel"
    assert bench.classify(entry, [{"severity": "warning", "code": "X", "line": 12}], spans) == "missed"
    compiles = {"label": "compiles", "targets": {}}
    assert bench.classify(compiles, [{**error, "line": 20}], spans) == "false-alarm"
    assert bench.classify(compiles, [{"severity": "warning", "code": "X", "line": 12}], spans) == "clean"


HOLDOUT = ROOT / "bench" / "type_probes_holdout"
HOLDOUT_LABELS = ROOT / "docs" / "benchmarks" / "type-probes" / "holdout-labels.json"


def test_the_held_out_set_is_labelled_as_it_is_now() -> None:
    """The held-out probes (written apart from the checker, measured once before any change
    they prompted) keep headers the script reads and labels that match their content."""
    files = bench.probe_files(HOLDOUT)
    assert len(files) >= 80
    probes = json.loads(HOLDOUT_LABELS.read_text())["probes"]
    assert {p.name for p in files} == probes.keys()
    for path in files:
        header = bench.parse_header(path.read_text())
        assert header is not None and probes[path.name]["class"] == header.cls, path.name
        assert probes[path.name]["sha256"] == bench.sha256(path), f"{path.name} changed since labelling"
