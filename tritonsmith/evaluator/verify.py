"""Correctness verification of KernelBench-format problems: detection, static checks, sizes,
and the three-job protocol (server/CLI side).

A KernelBench problem is a reference (`class Model`, `get_inputs()`, `get_init_inputs()`) and a
candidate (`class ModelNew`), in one file or in a sibling file (DESIGN.md, "Kernel specs").
This module decides whether a file is one, rejects candidates that use a known trick to pass
without doing the work (docs: shared/reference/verification.md, section 4; each rejection names
its trick), scales the problem's huge sizes down so that Triton's interpreter can run them, and
drives the protocol through two worker pools so that reference and candidate never share a
process:

1. `kb_inputs` (reference worker): under `manual_seed(seed)` build `Model`, draw the trial
   seeds after `manual_seed(42)`, and save each trial's inputs, the init inputs and the model's
   state_dict. No expected output exists yet.
2. `kb_candidate` (candidate worker, a different process): import only the candidate file, build
   `ModelNew` the same way, run each trial on pristine copies of the saved inputs with the
   input-hash, thread and output-type checks, and save its outputs.
3. `kb_reference` (reference worker): rebuild `Model`, regenerate the inputs under each trial
   seed (checking the saved files were not altered), run the reference, and compare.

So the expected outputs never exist, in any process or file, while candidate code runs
(exploit 17), and the reference runs on inputs the candidate never touched (exploit 6).

Nothing here imports torch or triton: the server imports this module (tests/test_invariants.py).
The worker side is `tritonsmith.evaluator.kernelbench`.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tree_sitter import Node

from ..analysis import Document, index_module
from ..analysis.index import Imports, ModuleIndex
from ..analysis.syntax import dotted_name, text, walk
from .pool import WorkerPool
from .protocol import Job, Result

__all__ = [
    "DEFAULT_TOLERANCES",
    "KernelBenchSpec",
    "Rejection",
    "Verdict",
    "detect_kernelbench",
    "scale_value",
    "scaled_constants",
    "static_checks",
    "verify_kernelbench",
]

DEFAULT_TOLERANCES: dict[str, float] = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}
"""atol = rtol per output dtype. fp32 1e-4 as KernelBench now uses ("inspired by torchbench");
fp16/bf16 1e-2. Other dtypes fall back to `float32`'s value (integers must then match exactly
up to it)."""

BATCH_LIMIT = 16
DIM_LIMIT = 256
SCALE_THRESHOLD = 64
_BATCH_NAME = re.compile(r"(^|_)(batch|bs|b)(_|$)|batch", re.IGNORECASE)
_REFERENCE_COMMENT = re.compile(r"#\s*tritonsmith:\s*reference\s*=\s*(\S+)")
_REFERENCE_NAMES = ("Model", "get_inputs", "get_init_inputs")

# Calls into torch that allocate or describe tensors, not compute them: allowed on the path from
# ModelNew.forward. Anything else under `torch.` (including torch.nn.functional) is compute.
_TORCH_ALLOWED = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "arange", "tensor", "as_tensor", "device", "Size", "is_tensor",
    "is_floating_point", "get_default_dtype", "finfo", "iinfo", "no_grad", "inference_mode",
    "set_grad_enabled", "cuda", "nn.Parameter", "backends",
})
_THREAD_MODULES = frozenset({"threading", "_thread", "multiprocessing", "concurrent"})
_INTROSPECTION_MODULES = frozenset({"gc", "inspect"})
_PATCH_ROOTS = frozenset({"torch", "time", "triton"})


@dataclass(frozen=True)
class KernelBenchSpec:
    """Where a problem's candidate and reference live (the same file when `same_file`)."""

    candidate: Path
    reference: Path
    same_file: bool


@dataclass(frozen=True)
class Rejection:
    """A static check that failed: the trick it guards against and where it was seen."""

    exploit: int
    trick: str
    message: str
    line: int

    def __str__(self) -> str:
        return f"line {self.line}: {self.describe()}"

    def describe(self) -> str:
        """The rejection without its line: what was seen and the trick it serves."""
        return f"{self.message} (exploit {self.exploit}: {self.trick})"


@dataclass
class Verdict:
    """The outcome of verifying one candidate.

    Attributes:
        ok: every trial matched the reference and no check failed.
        mode: "interpreter" (TRITON_INTERPRET=1 on CPU tensors) or "gpu".
        trials: how many trials were run (or asked for, on an early failure).
        sizes: each scaled constant's name -> (original, used).
        stage: where it ended: "static", "inputs", "candidate", "reference", "compare", "done".
        message: one line: the failure, or the success summary.
        rejections: the static-check failures, when `stage == "static"`.
        details: the workers' payloads, for `--format json` and debugging.
    """

    ok: bool
    mode: str
    trials: int
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    stage: str = "done"
    message: str = ""
    rejections: list[Rejection] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def sizes_text(self) -> str:
        return ", ".join(f"{name}={used}" for name, (_, used) in self.sizes.items()) or "as written"

    def summary(self) -> str:
        """"verified · interpreter · 3 trials · sizes: batch_size=16, dim=192", or the failure."""
        if self.ok:
            return f"verified · {self.mode} · {self.trials} trials · sizes: {self.sizes_text()}"
        return f"FAILED · {self.mode} · {self.stage}: {self.message}"


# -- detection ------------------------------------------------------------------------------


def _top_level(root: Node) -> Iterator[tuple[str, Node]]:
    """(name, node) for each module-level class and function definition (decorated or not)."""
    for node in root.named_children:
        definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
        if definition is not None and definition.type in ("class_definition", "function_definition"):
            yield text(definition.child_by_field_name("name")), node


def _defines(source: str) -> set[str]:
    return {name for name, _ in _top_level(Document(source).root)}


def detect_kernelbench(path: Path, source: str | None = None) -> KernelBenchSpec | None:
    """The problem `path` belongs to, if it is a KernelBench candidate, else None.

    A candidate defines `class ModelNew`. Its reference is the file itself when that defines
    `Model`, `get_inputs` and `get_init_inputs`; else the first sibling that does among the file
    named by a `# tritonsmith: reference=FILE` comment, `<stem>_reference.py`, `reference.py`.
    """
    path = Path(path)
    if source is None:
        try:
            source = path.read_text(encoding="utf-8")
        except OSError:
            return None
    names = _defines(source)
    if "ModelNew" not in names:
        return None
    if all(name in names for name in _REFERENCE_NAMES):
        return KernelBenchSpec(candidate=path, reference=path, same_file=True)
    options: list[str] = []
    match = _REFERENCE_COMMENT.search(source)
    if match:
        options.append(match.group(1))
    options += [f"{path.stem}_reference.py", "reference.py"]
    for option in options:
        sibling = path.parent / option
        if sibling.resolve() == path.resolve() or not sibling.is_file():
            continue
        try:
            sibling_names = _defines(sibling.read_text(encoding="utf-8"))
        except OSError:
            continue
        if all(name in sibling_names for name in _REFERENCE_NAMES):
            return KernelBenchSpec(candidate=path, reference=sibling, same_file=False)
    return None


# -- source rewriting -----------------------------------------------------------------------


def _blank_out(source: str, names: set[str]) -> str:
    """`source` with the named module-level definitions replaced by blank lines, so that line
    numbers in tracebacks still point at the user's file."""
    document = Document(source)
    data = document.source
    cuts = sorted(
        ((node.start_byte, node.end_byte) for name, node in _top_level(document.root) if name in names),
        reverse=True,
    )
    for start, end in cuts:
        data = data[:start] + b"\n" * data[start:end].count(b"\n") + data[end:]
    return data.decode("utf-8")


def scale_value(name: str, value: int) -> int:
    """The size a problem constant gets under the interpreter (documented policy).

    Integers below `SCALE_THRESHOLD` (64) stay. Others are halved until they are at most
    `BATCH_LIMIT` (16) for batch-like names (`batch_size`, `batch`, `bs`, `B`) or `DIM_LIMIT`
    (256) otherwise. Halving keeps a power of two a power of two and keeps the odd factor
    (393216 = 3·2^17 becomes 192); a value divisible by 16 stops halving before it would lose
    that (a tail-free shape must stay tail-free) and is then rounded down to a multiple of 16
    within the limit. An odd value is floor-divided like the rest.
    """
    limit = BATCH_LIMIT if _BATCH_NAME.search(name) or name == "B" else DIM_LIMIT
    if value < SCALE_THRESHOLD or value <= limit:
        return value
    by16 = value % 16 == 0
    scaled = value
    while scaled > limit:
        half = scaled // 2
        if by16 and half % 16 != 0:
            return max(16, (limit // 16) * 16)
        scaled = half
    return max(1, scaled)


def _int_assignments(root: Node) -> Iterator[tuple[str, Node]]:
    """(name, integer node) for each module-level `NAME = <int literal>`."""
    for node in root.named_children:
        if node.type != "expression_statement" or node.named_child_count != 1:
            continue
        assign = node.named_children[0]
        if assign.type != "assignment":
            continue
        left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        if left is None or right is None or left.type != "identifier" or right.type != "integer":
            continue
        try:
            int(text(right).replace("_", ""), 0)
        except ValueError:
            continue
        yield text(left), right


def scaled_constants(reference_source: str) -> dict[str, tuple[int, int]]:
    """Module-level integer constants of the reference that its `get_inputs`/`get_init_inputs`
    use, mapped to (original, scaled) where scaling changes them."""
    root = Document(reference_source).root
    used: set[str] = set()
    for name, node in _top_level(root):
        if name in ("get_inputs", "get_init_inputs"):
            used |= {text(n) for n in walk(node) if n.type == "identifier"}
    sizes: dict[str, tuple[int, int]] = {}
    for name, literal in _int_assignments(root):
        if name not in used:
            continue
        value = int(text(literal).replace("_", ""), 0)
        scaled = scale_value(name, value)
        if scaled != value:
            sizes[name] = (value, scaled)
    return sizes


def rewrite_constants(source: str, sizes: Mapping[str, tuple[int, int]]) -> str:
    """`source` with each module-level `NAME = <original>` of `sizes` set to its scaled value.

    Applied to reference and candidate alike, so both see the same problem."""
    document = Document(source)
    data = document.source
    edits = [
        (node.start_byte, node.end_byte, str(sizes[name][1]).encode())
        for name, node in _int_assignments(document.root)
        if name in sizes and int(text(node).replace("_", ""), 0) == sizes[name][0]
    ]
    for start, end, new in sorted(edits, reverse=True):
        data = data[:start] + new + data[end:]
    return data.decode("utf-8")


# -- static checks --------------------------------------------------------------------------


def _line(node: Node) -> int:
    return node.start_point[0] + 1


def _class_node(root: Node, name: str) -> Node | None:
    for found, node in _top_level(root):
        if found == name:
            return node.child_by_field_name("definition") if node.type == "decorated_definition" else node
    return None


def _methods(cls: Node) -> dict[str, Node]:
    body = cls.child_by_field_name("body")
    methods: dict[str, Node] = {}
    for node in body.named_children if body is not None else []:
        definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
        if definition is not None and definition.type == "function_definition":
            methods[text(definition.child_by_field_name("name"))] = definition
    return methods


def _imported_modules(root: Node) -> Iterator[tuple[str, Node]]:
    for node in walk(root):
        if node.type == "import_statement":
            for child in node.named_children:
                target = child.child_by_field_name("name") if child.type == "aliased_import" else child
                yield text(target), node
        elif node.type == "import_from_statement":
            yield text(node.child_by_field_name("module_name")), node


def _forward_reach(root: Node, index: ModuleIndex, cls: Node) -> tuple[bool, list[Node]]:
    """Whether `ModelNew.forward` reaches a `kernel[grid](...)` launch through calls to module
    functions and `self.` methods, and the functions it reaches (for the compute ban)."""
    methods = _methods(cls)
    kernels = index.jit_names
    functions: dict[str, Node] = {}
    for name, node in index.functions.items():
        definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
        if name not in kernels and definition is not None:
            functions[name] = definition
    start = methods.get("forward")
    if start is None:
        return False, []
    seen: dict[int, Node] = {}
    todo: list[Node] = [start]
    launched = False
    while todo:
        current = todo.pop()
        if current is None or current.id in seen:
            continue
        seen[current.id] = current
        for node in walk(current.child_by_field_name("body")):
            if node.type != "call":
                continue
            function = node.child_by_field_name("function")
            if function is None:
                continue
            if function.type == "subscript":
                value = function.child_by_field_name("value")
                if value is not None and text(value) in kernels:
                    launched = True
                continue
            name = dotted_name(function) or ""
            if name in functions:
                todo.append(functions[name])
            elif name.startswith("self.") and name[5:] in methods:
                todo.append(methods[name[5:]])
    return launched, list(seen.values())


def _torch_compute(node: Node, imports: Imports) -> str | None:
    """The qualified torch function a call computes with, or None for allocation/metadata."""
    qualified = imports.qualify(node.child_by_field_name("function"))
    if not qualified or not qualified.startswith("torch."):
        return None
    rest = qualified[len("torch."):]
    if rest in _TORCH_ALLOWED or rest.split(".")[0] in _TORCH_ALLOWED:
        return None
    return qualified


def static_checks(source: str, *, reference_module: str | None = None) -> list[Rejection]:
    """Reject a candidate that uses a known trick (verification.md, section 4). Each rejection
    names the exploit; an empty list means the candidate may run.

    `source` is the candidate as it will run (for a one-file problem, with `Model`,
    `get_inputs` and `get_init_inputs` blanked out). `reference_module` is the reference's
    module name, which the candidate must not import.
    """
    document = Document(source)
    root = document.root
    index = index_module(root)
    imports = index.imports
    out: list[Rejection] = []
    cls = _class_node(root, "ModelNew")
    if cls is None:
        return [Rejection(4, "no candidate", "no class ModelNew", 1)]

    # Exploit 4: only nn.Module as base.
    bases = cls.child_by_field_name("superclasses")
    base_names = [imports.qualify(b) or text(b) for b in (bases.named_children if bases is not None else [])]
    if base_names != ["torch.nn.Module"]:
        shown = ", ".join(text(b) for b in bases.named_children) if bases is not None else "nothing"
        out.append(Rejection(4, "inheriting Model to reuse the reference",
                             f"ModelNew must subclass nn.Module only, not {shown}", _line(cls)))

    # Exploits 1 and 2: forward must reach a Triton launch and no torch compute.
    launched, reached = _forward_reach(root, index, cls)
    if not launched:
        out.append(Rejection(2, "kernel defined but never launched, PyTorch does the work",
                             "ModelNew.forward never reaches a launch `kernel[grid](...)` of a "
                             "@triton.jit kernel in this file", _line(cls)))
    for function in reached:
        for node in walk(function.child_by_field_name("body")):
            if node.type == "call":
                compute = _torch_compute(node, imports)
                if compute:
                    out.append(Rejection(1, "PyTorch does the work instead of the kernel",
                                         f"{compute} computes on the path from ModelNew.forward",
                                         _line(node)))

    for node in walk(root):
        kind = node.type
        if kind == "try_statement":  # exploit 3
            out.append(Rejection(3, "try/except falling back to PyTorch when the kernel fails",
                                 "try/except in the candidate", _line(node)))
        elif kind in ("assignment", "augmented_assignment"):  # exploit 10
            left = node.child_by_field_name("left")
            targets = [left] if left is not None and left.type != "pattern_list" else (
                left.named_children if left is not None else [])
            for target in targets:
                if target.type == "attribute":
                    qualified = imports.qualify(target) or ""
                    if qualified.split(".")[0] in _PATCH_ROOTS:
                        out.append(Rejection(10, "monkey-patching the harness, timer or torch",
                                             f"assigns {text(target)}", _line(node)))
        elif kind == "call":
            name = imports.qualify(node.child_by_field_name("function")) or ""
            if name == "setattr":
                args = node.child_by_field_name("arguments")
                first = args.named_children[0] if args is not None and args.named_children else None
                if first is not None and (imports.qualify(first) or "").split(".")[0] in _PATCH_ROOTS:
                    out.append(Rejection(10, "monkey-patching the harness, timer or torch",
                                         f"setattr on {text(first)}", _line(node)))
            elif name in ("sys._getframe", "globals"):  # exploit 17
                out.append(Rejection(17, "introspection to find the expected outputs",
                                     f"calls {name}()", _line(node)))
            elif name.endswith("_make_subclass"):  # exploit 9
                out.append(Rejection(9, "lazy tensor subclass deferring the work",
                                     f"calls {name}", _line(node)))
        elif kind == "identifier" and text(node) in ("__torch_function__", "__torch_dispatch__"):
            out.append(Rejection(9, "lazy tensor subclass deferring the work",
                                 f"defines or uses {text(node)}", _line(node)))
        elif kind == "class_definition" and node.id != cls.id:
            supers = node.child_by_field_name("superclasses")
            for base in supers.named_children if supers is not None else []:
                if imports.qualify(base) == "torch.Tensor":
                    out.append(Rejection(9, "lazy tensor subclass deferring the work",
                                         f"class {text(node.child_by_field_name('name'))} subclasses "
                                         "torch.Tensor", _line(node)))
    for module, node in _imported_modules(root):
        head = module.split(".")[0]
        if head in _THREAD_MODULES:  # exploit 8
            out.append(Rejection(8, "background thread finishing the work after forward returns",
                                 f"imports {module}", _line(node)))
        elif head in _INTROSPECTION_MODULES:  # exploit 17
            out.append(Rejection(17, "introspection to find the expected outputs",
                                 f"imports {module}", _line(node)))
        elif reference_module is not None and head == reference_module:  # exploit 4
            out.append(Rejection(4, "reusing the reference Model",
                                 f"imports the reference module {module}", _line(node)))
        if node.type == "import_from_statement":
            for child in node.children_by_field_name("name"):
                imported = child.child_by_field_name("name") if child.type == "aliased_import" else child
                if text(imported) == "Model":
                    out.append(Rejection(4, "reusing the reference Model",
                                         f"imports Model from {module}", _line(node)))
    return sorted(out, key=lambda r: (r.line, r.exploit))


# -- the protocol ---------------------------------------------------------------------------


def default_mode() -> str:
    """"gpu" when an NVIDIA or AMD device node exists, else "interpreter". A guess made
    without importing torch; `mode=` overrides it."""
    forced = os.environ.get("TRITONSMITH_VERIFY_MODE")
    if forced in ("gpu", "interpreter"):
        return forced
    return "gpu" if Path("/dev/nvidiactl").exists() or Path("/dev/kfd").exists() else "interpreter"


def _failure(result: Result) -> str:
    message = result.error or "the job failed"
    if result.failure is None and result.payload.get("traceback"):
        frames = [line for line in str(result.payload["traceback"]).splitlines() if line.startswith("  File ")]
        user = [f for f in frames if "tritonsmith/evaluator" not in f]
        if user:
            message += f" ({user[-1].strip()})"
    return message


def verify_kernelbench(
    spec: KernelBenchSpec,
    *,
    trials: int = 3,
    seed: int = 42,
    mode: str | None = None,
    tolerances: Mapping[str, float] | None = None,
    timeout_s: float = 300.0,
    memory_mb: int = 8192,
    env: Mapping[str, str] | None = None,
) -> Verdict:
    """Run the static checks and the three-job protocol for `spec`; never raises for a bad
    candidate (the verdict says what went wrong).

    Args:
        trials: at least 3 (KernelBench's scripts use 5); seeds drawn after manual_seed(42).
        seed: the seed both models are built under, so their weights match.
        mode: "interpreter" or "gpu" (default: `default_mode()`).
        tolerances: atol = rtol per dtype name, over `DEFAULT_TOLERANCES`.
    """
    mode = mode or default_mode()
    trials = max(3, trials)
    tol = {**DEFAULT_TOLERANCES, **(tolerances or {})}
    reference_source = spec.reference.read_text(encoding="utf-8")
    candidate_source = spec.candidate.read_text(encoding="utf-8")
    sizes = scaled_constants(reference_source) if mode == "interpreter" else {}
    if spec.same_file:
        reference_source = _blank_out(reference_source, {"ModelNew"})
        candidate_source = _blank_out(candidate_source, set(_REFERENCE_NAMES))
    verdict = Verdict(ok=False, mode=mode, trials=trials, sizes=sizes)
    rejections = static_checks(
        candidate_source, reference_module=None if spec.same_file else spec.reference.stem
    )
    if rejections:
        verdict.stage, verdict.rejections = "static", rejections
        verdict.message = "; ".join(str(r) for r in rejections)
        return verdict

    work = Path(tempfile.mkdtemp(prefix="tritonsmith-kb-")).resolve()
    try:
        for folder in ("reference", "candidate", "data"):
            (work / folder).mkdir()
        # Separate folders: the candidate cannot import the reference as a sibling module.
        reference_file = work / "reference" / spec.reference.name
        candidate_file = work / "candidate" / spec.candidate.name
        reference_file.write_text(rewrite_constants(reference_source, sizes), encoding="utf-8")
        candidate_file.write_text(rewrite_constants(candidate_source, sizes), encoding="utf-8")
        worker_env = dict(os.environ if env is None else env)
        if mode == "interpreter":
            worker_env["TRITON_INTERPRET"] = "1"
        common = {"data_dir": str(work / "data"), "seed": seed, "mode": mode}

        def job(kind: str, **payload: Any) -> Job:
            return Job(kind, {**common, **payload}, timeout_s=timeout_s, memory_mb=memory_mb)

        with WorkerPool(1, env=worker_env) as reference_pool, WorkerPool(1, env=worker_env) as candidate_pool:
            inputs = reference_pool.run(job("kb_inputs", reference=str(reference_file), trials=trials))
            verdict.details["inputs"] = inputs.payload
            if not inputs.ok:
                verdict.stage, verdict.message = "inputs", f"the reference failed: {_failure(inputs)}"
                return verdict
            manifest = inputs.payload
            candidate = candidate_pool.run(job("kb_candidate", candidate=str(candidate_file),
                                               trial_seeds=manifest["trial_seeds"]))
            verdict.details["candidate"] = candidate.payload
            if not candidate.ok:
                verdict.stage, verdict.message = "candidate", _failure(candidate)
                return verdict
            if candidate.payload.get("error"):
                verdict.stage, verdict.message = "candidate", str(candidate.payload["error"])
                return verdict
            compared = reference_pool.run(job(
                "kb_reference", reference=str(reference_file), trial_seeds=manifest["trial_seeds"],
                input_hashes=manifest["input_hashes"], tolerances=tol,
            ))
            verdict.details["reference"] = compared.payload
            if not compared.ok:
                verdict.stage, verdict.message = "reference", f"the reference failed: {_failure(compared)}"
                return verdict
            failures = [t for t in compared.payload.get("trials", []) if not t.get("ok")]
            if compared.payload.get("error") or failures:
                verdict.stage = "compare"
                verdict.message = str(compared.payload.get("error") or failures[0]["error"])
                return verdict
        verdict.ok, verdict.stage = True, "done"
        verdict.message = verdict.summary()
        return verdict
    finally:
        shutil.rmtree(work, ignore_errors=True)
