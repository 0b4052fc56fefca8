"""Compile one kernel for GPU targets on a machine that has none, inside a worker process.

`handle_compile(payload)` is what a worker runs for a "compile" job. It cuts the kernel out of
the user's file (`extract.py`: the user's module is never imported, it may allocate CUDA tensors
or benchmark at import time), writes the cut to a real file (`@triton.jit` reads its source with
`inspect`), imports it and calls `triton.compile` once per target and per scenario: each
autotune `Config`, else each launch site, else the parameter defaults. Triton cross-compiles
with its bundled ptxas / LLVM AMDGPU backend, so no driver is needed.

Everything the result says is plain JSON (the worker sends it over a pipe). Positions are
tree-sitter points of the ORIGINAL file: 0-based rows and 0-based UTF-8 byte columns.

Triton is imported inside functions only: the server imports this package too and must not pay
for (or crash on) a triton import.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tree_sitter import Node

from ..analysis import Document, index_module
from ..analysis.argtypes import LaunchTyper
from ..analysis.index import Kernel, ModuleIndex
from ..analysis.syntax import call_args, text
from ..rules.context import OPTION_KEYS, CompileScenario, KernelContext
from ..rules.pack import match_rules
from .extract import Extracted, ExtractionError, extract_kernel_module

__all__ = ["TargetLimits", "handle_compile", "parse_target", "target_limits"]

_MLIR_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$",
                         re.MULTILINE)
_PTXAS_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_REGS = re.compile(r"Used (\d+) registers")
_CUOBJDUMP_RES = re.compile(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")
_POINTER_CALLS = ("load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas",
                  "atomic_xchg", "atomic_and", "atomic_or", "atomic_xor", "make_block_ptr",
                  "make_tensor_descriptor")
_MAX_TEXT = 8000


# -- targets ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetLimits:
    """Per-SM (per-CU) limits that bound occupancy, from the vendors' documentation."""

    smem_per_block: int  # the most shared memory (LDS) one block may use, bytes
    smem_per_sm: int
    regs_per_sm: int
    threads_per_sm: int
    blocks_per_sm: int
    approximate: bool = False
    note: str = ""


# CUDA C Programming Guide, "Technical Specifications per Compute Capability".
_NVIDIA_LIMITS: dict[int, TargetLimits] = {
    75: TargetLimits(65536, 65536, 65536, 1024, 16),
    80: TargetLimits(166912, 167936, 65536, 2048, 32),
    86: TargetLimits(101376, 102400, 65536, 1536, 16),
    87: TargetLimits(166912, 167936, 65536, 2048, 32),
    89: TargetLimits(101376, 102400, 65536, 1536, 24),
    90: TargetLimits(232448, 233472, 65536, 2048, 32),
    100: TargetLimits(232448, 233472, 65536, 2048, 32),
    120: TargetLimits(101376, 102400, 65536, 1536, 32),
}
# AMD CDNA: LDS per workgroup, 4 SIMDs per CU, up to 8 waves per SIMD (512 VGPRs per lane).
_AMD_LDS = {"gfx90a": 65536, "gfx942": 65536, "gfx950": 163840}


def parse_target(name: str) -> tuple[str, int | str, int]:
    """`sm_90` -> ("cuda", 90, 32); `gfx942` -> ("hip", "gfx942", 64). Raises ValueError."""
    match = re.fullmatch(r"sm_?(\d+)[a-z]?", name.strip())
    if match:
        return "cuda", int(match.group(1)), 32
    match = re.fullmatch(r"gfx[0-9a-f]+", name.strip())
    if match:
        # CDNA (gfx9xx) runs wave64; RDNA (gfx10xx and later) defaults to wave32 in Triton.
        return "hip", name.strip(), 64 if name.strip().startswith("gfx9") else 32
    raise ValueError(f"unknown target {name!r} (use e.g. sm_80, sm_90, gfx942)")


def target_limits(name: str) -> TargetLimits:
    backend, arch, _ = parse_target(name)
    if backend == "cuda":
        assert isinstance(arch, int)
        if arch in _NVIDIA_LIMITS:
            return _NVIDIA_LIMITS[arch]
        nearest = max((a for a in _NVIDIA_LIMITS if a <= arch), default=75)
        base = _NVIDIA_LIMITS[nearest]
        return TargetLimits(base.smem_per_block, base.smem_per_sm, base.regs_per_sm,
                            base.threads_per_sm, base.blocks_per_sm, approximate=True,
                            note=f"limits of sm_{nearest} used for sm_{arch}")
    lds = _AMD_LDS.get(str(arch), 65536)
    return TargetLimits(lds, lds, 512, 2048, 32, approximate=True,
                        note="AMD estimate: waves per SIMD from the compiler's occupancy, 4 SIMDs/CU")


# -- capture ------------------------------------------------------------------------------


@contextlib.contextmanager
def _capture_fd2() -> Iterator[io.StringIO]:
    """Capture what native code (MLIR, LLVM) writes to file descriptor 2."""
    buffer = io.StringIO()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield buffer
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            buffer.write(captured.read().decode("utf-8", errors="replace"))


def _chain(error: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not e for e in out):
        out.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return out


def _chain_text(error: BaseException) -> str:
    return "\n".join(f"{type(e).__name__}: {e}" for e in _chain(error))


# -- signatures ---------------------------------------------------------------------------


def _node_range(node: Node | None) -> dict[str, list[int]] | None:
    if node is None:
        return None
    return {"start": [node.start_point[0], node.start_point[1]],
            "end": [node.end_point[0], node.end_point[1]]}


def _pointer_params(kernel: Kernel, index: ModuleIndex, _depth: int = 0) -> set[str]:
    """Parameters that are the base of a load, store, atomic or block pointer in the body:
    the additive terms of the pointer argument (`a_ptr + rm * stride_am` names `a_ptr`, not the
    stride), followed through locals (`ptrs = a_ptr + offs; tl.load(ptrs)`) and into the jit
    helpers the kernel passes them to (`_load(p, offs)` where `_load` loads from its `p`)."""
    names = {p.name for p in kernel.params}
    assigned: dict[str, list[Node]] = {}
    bases: list[Node | None] = []
    stack = [kernel.node]
    while stack:
        node = stack.pop()
        stack.extend(node.named_children)
        if node.type == "assignment":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is not None and left.type == "identifier" and right is not None:
                assigned.setdefault(text(left), []).append(right)
        elif node.type == "call":
            function = node.child_by_field_name("function")
            qualified = index.imports.qualify(function) or ""
            positional, keywords = call_args(node)
            if qualified.startswith("triton") and qualified.rsplit(".", 1)[-1] in _POINTER_CALLS:
                base = positional[0] if positional else None
                for key in ("pointer", "base"):
                    if key in keywords:
                        base = keywords[key][1]
                bases.append(base)
            elif function is not None and function.type == "identifier" and _depth < 8:
                helper = index.kernel(text(function))
                if helper is not None and helper is not kernel:
                    inner = _pointer_params(helper, index, _depth + 1)
                    for param in helper.params:
                        if param.name in inner:
                            if param.index < len(positional):
                                bases.append(positional[param.index])
                            elif param.name in keywords:
                                bases.append(keywords[param.name][1])
    found: set[str] = set()
    for base in bases:
        candidates: list[Node] = []
        terms = [(base, 0)]
        while terms:
            term, depth = terms.pop()
            if term is None or depth > 12:
                continue
            if term.type == "parenthesized_expression":
                terms.extend((c, depth + 1) for c in term.named_children)
            elif term.type == "binary_operator" and text(term.child_by_field_name("operator")) in "+-":
                terms.append((term.child_by_field_name("left"), depth + 1))
                terms.append((term.child_by_field_name("right"), depth + 1))
            elif term.type == "identifier":
                name = text(term)
                if name in names and name not in assigned:
                    candidates.append(term)
                terms.extend((value, depth + 1) for value in assigned.get(name, []))
        # One pointer per address: `x_ptr + row * w + half + col` adds the integer `half` too. A
        # name that says it is a pointer wins; otherwise the leftmost term is the base.
        named = {text(c) for c in candidates if "ptr" in text(c).lower() or "pointer" in text(c).lower()}
        if named:
            found |= named
        elif candidates:
            found.add(text(min(candidates, key=lambda c: c.start_byte)))
    return found


@dataclass
class _Typed:
    """A scenario's runtime signature: types, constexpr values that the launch fixes (a literal
    None), what each type rests on, and which were assumed."""

    signature: dict[str, str]
    constexprs: dict[str, Any]
    sources: dict[str, str]
    assumed: list[str]


def _fallback_type(name: str, pointers: set[str]) -> str:
    return "*fp32" if name in pointers or name.endswith(("ptr", "_ptrs", "Ptr")) else "i32"


def _settled(scenarios: list[CompileScenario], recorded: dict[str, Any]) -> list[CompileScenario]:
    """`scenarios` with the constexprs the source left unknown taken from the values recorded at
    a launch of the check run (`BLOCK=triton.next_power_of_2(n)` as it ran), said in the label."""
    out = []
    for scenario in scenarios:
        if scenario.missing and all(name in recorded for name in scenario.missing):
            values = {**scenario.constexprs, **{name: recorded[name] for name in scenario.missing}}
            shown = ", ".join(f"{name}={recorded[name]!r}" for name in scenario.missing)
            scenario = replace(scenario, constexprs=values, missing=[],
                                           label=f"{scenario.label} ({shown} as launched in the check run)")
        out.append(scenario)
    return out


def _profiled(scenarios: list[CompileScenario], launches: list[dict[str, Any]],
              constexpr_flags: dict[str, bool]) -> list[CompileScenario]:
    """One scenario per profiled launch: its constexprs and options as it ran, typed by the
    source's first launch (the caller passes the recorded types as `arg_types`)."""
    base = scenarios[0] if scenarios else None
    out = []
    for launch in launches:
        values = {**(base.constexprs if base else {}), **dict(launch.get("constexprs") or {})}
        missing = [name for name, is_constexpr in constexpr_flags.items() if is_constexpr and name not in values]
        options = {k: int(v) for k, v in dict(launch.get("options") or {}).items() if k in OPTION_KEYS}
        out.append(CompileScenario(str(launch.get("key") or "as profiled"), None, base.origin if base else None,
                             values, options, missing, base.launch if base else None))
    return out


def _typed(constexpr_flags: dict[str, bool], scenario: CompileScenario, typer: LaunchTyper,
           pointers: set[str], recorded: dict[str, str]) -> _Typed:
    """The runtime parameters' types for one scenario: as recorded at a launch of the check run
    when given, else as the launch site's arguments show (argtypes.py), else assumed (`*fp32`
    for a pointer, `i32` for an integer), and listed as assumed."""
    runtime = [name for name, is_constexpr in constexpr_flags.items() if not is_constexpr]
    positions = {name: i for i, name in enumerate(constexpr_flags)}
    try:
        seen = typer.launch_types(scenario.launch, runtime, positions) if scenario.launch is not None else {}
    except Exception:  # noqa: BLE001 - reading the source must never cost the compile; assume instead
        seen = {}
    out = _Typed({}, {}, {}, [])
    for name in runtime:
        if name in recorded:
            kind, source, assumed = recorded[name], "recorded at the launch in the check run", False
        elif name in seen and seen[name].type != "*":
            kind, source, assumed = seen[name].type, seen[name].source, False
        elif name in seen:  # a tensor of a dtype the source does not show
            kind, source, assumed = "*fp32", f"assumed (a tensor: {seen[name].source})", True
        else:
            kind, source, assumed = _fallback_type(name, pointers), "assumed", True
        if kind in ("constexpr", "none"):  # a literal None: Triton makes it a constexpr
            out.signature[name] = "constexpr"
            out.constexprs[name] = None
        else:
            out.signature[name] = kind
        out.sources[name] = source
        if assumed:
            out.assumed.append(f"{name}: {kind}")
    return out


# -- resources ----------------------------------------------------------------------------


def _resources(compiled: Any, target: str, ptxas_log: str, cache_dir: Path) -> dict[str, Any]:
    metadata = compiled.metadata
    shared = int(getattr(metadata, "shared", 0) or 0)
    num_warps = int(getattr(metadata, "num_warps", 4) or 4)
    warp_size = int(getattr(metadata, "warp_size", 0) or parse_target(target)[2])
    registers: int | None = None
    spills: int | None = None
    spill_loads: int | None = None
    stack: int | None = None
    local: dict[str, int] | None = None  # spill bytes per thread inside and outside loops (SASS)
    notes: list[str] = []
    asm = compiled.asm
    limits = target_limits(target)
    record = cache_dir / f"{getattr(metadata, 'hash', '') or compiled.hash}-{target}.json"
    if "cubin" in asm:
        if ptxas_log:
            regs = _PTXAS_REGS.search(ptxas_log)
            spill = _PTXAS_SPILL.search(ptxas_log)
            registers = int(regs.group(1)) if regs else None
            if spill:
                stack, spills, spill_loads = (int(g) for g in spill.groups())
            if spills or spill_loads:
                local = _local_memory(asm["cubin"])
            with contextlib.suppress(OSError):
                record.parent.mkdir(parents=True, exist_ok=True)
                record.write_text(json.dumps({"registers": registers, "spills": spills,
                                              "spill_loads": spill_loads, "stack": stack, "local": local}))
        elif record.exists():  # a cache hit: ptxas did not run this time
            with contextlib.suppress(OSError, ValueError):
                saved = json.loads(record.read_text())
                registers, spills = saved.get("registers"), saved.get("spills")
                spill_loads, stack = saved.get("spill_loads"), saved.get("stack")
                local = saved.get("local")
        if registers is None:
            registers, stack = _cuobjdump(asm["cubin"])
            if registers is not None:
                notes.append("registers from cuobjdump; spill bytes unknown (cached compile)")
    elif "amdgcn" in asm:
        amdgcn = asm["amdgcn"]
        vgpr = re.search(r"\.vgpr_count:\s+(\d+)", amdgcn)
        vspill = re.search(r"\.vgpr_spill_count:\s+(\d+)", amdgcn)
        sspill = re.search(r"\.sgpr_spill_count:\s+(\d+)", amdgcn)
        scratch = re.search(r"; ScratchSize: (\d+)", amdgcn)
        registers = int(vgpr.group(1)) if vgpr else None
        if vspill or sspill:
            spills = int(vspill.group(1) if vspill else 0) + int(sspill.group(1) if sspill else 0)
        stack = int(scratch.group(1)) if scratch else None
        notes.append("AMD: registers are VGPRs per lane, spills are spilled VGPR+SGPR counts")
    occupancy = _occupancy(target, limits, registers, shared, num_warps, warp_size, asm)
    exceeds = shared > limits.smem_per_block
    if limits.note:
        notes.append(limits.note)
    return {
        "registers": registers,
        "spills": spills,
        "spill_loads": spill_loads,
        "stack": stack,
        # Per thread, the local-memory bytes the machine code moves inside loops (once per
        # iteration) and outside them (once per program); None without spills or SASS.
        "spill_bytes_in_loops": (local or {}).get("in_loops"),
        "spill_bytes_outside_loops": (local or {}).get("outside_loops"),
        "shared": shared,
        "shared_limit": limits.smem_per_block,
        "exceeds_shared": exceeds,
        "num_warps": num_warps,
        "num_stages": int(getattr(metadata, "num_stages", 0) or 0),
        "staged": _staged(asm),
        "threads_per_block": num_warps * warp_size,
        "blocks_per_sm": occupancy[0],
        "occupancy_limited_by": occupancy[1],
        "approximate": limits.approximate,
        "notes": notes,
    }


_STAGED_OP = re.compile(r"\.(?:async_\w+|local_alloc|\w*barrier\w*|warp_group_dot\w*|\w*tma\w*|\w*to_local\w*)\b")
"""Operations in a TTGIR module that buffers in shared memory or asynchronous copies put there:
what `num_stages` shapes (the software pipeliner's buffers, Hopper's and Blackwell's warp
specialisation, AMD's stream pipeliner), and what holds a `tl.dot`'s operands."""


def _staged(asm: Mapping[str, Any]) -> bool | None:
    """Whether `num_stages` may have shaped this compile. Only the passes that place buffers and
    asynchronous copies read it (the pipeliner assigns latencies to loads, then buffers them), so a
    module with none of those operations is what every other `num_stages` above 1 compiles to
    (`predicted.py` lets such a Config stand for its siblings). None: no TTGIR to read."""
    ttgir = asm.get("ttgir")
    if not isinstance(ttgir, str):
        return None
    return _STAGED_OP.search(ttgir) is not None


_SASS_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")
_SASS_TARGET = re.compile(r"\s*(?:`\(.*?\)\s*)?0x([0-9a-f]+)")
_SASS_WIDTH = re.compile(r"\.[US]?(8|16|32|64|128)\b")


def _cuobjdump_says(cubin: bytes, flag: str, timeout: float) -> str | None:
    """What Triton's `cuobjdump <flag>` prints about `cubin`; None when it cannot run."""
    try:
        import triton

        tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        with tempfile.NamedTemporaryFile(suffix=".cubin") as handle:
            handle.write(cubin)
            handle.flush()
            return subprocess.run([str(tool), flag, handle.name], capture_output=True, text=True,
                                  timeout=timeout, check=False).stdout
    except (OSError, subprocess.SubprocessError, ImportError):
        return None


def _local_memory(cubin: bytes) -> dict[str, int] | None:
    """Spill traffic per thread from the machine code: the bytes of local loads and stores
    (`LDL`, `STL`) inside a loop (between a backward branch and its target) and outside every
    loop. ptxas's spill counts say how much, not where: a spill in a GEMM's K loop is paid on
    every iteration, one before the loop once (`predict.py`)."""
    text = _cuobjdump_says(cubin, "-sass", timeout=60)
    return sass_local_memory(text) if text is not None else None


def sass_local_memory(text: str) -> dict[str, int] | None:
    """`_local_memory` on a `cuobjdump -sass` listing; None when it holds no instruction."""
    rows = [(int(m.group(1), 16), m.group(2), m.group(3)) for m in map(_SASS_INSTRUCTION.search, text.splitlines()) if m]
    if not rows:
        return None
    loops = []
    for address, op, operands in rows:
        target = _SASS_TARGET.match(operands) if op.startswith("BRA") else None
        if target and int(target.group(1), 16) < address:  # a branch back: a loop's latch
            loops.append((int(target.group(1), 16), address))
    inside = outside = 0
    for address, op, _ in rows:
        if op.split(".")[0] not in ("LDL", "STL"):
            continue
        width = _SASS_WIDTH.search(op)
        moved = int(width.group(1)) // 8 if width else 4
        if any(start <= address <= end for start, end in loops):
            inside += moved
        else:
            outside += moved
    return {"in_loops": inside, "outside_loops": outside}


def _cuobjdump(cubin: bytes) -> tuple[int | None, int | None]:
    out = _cuobjdump_says(cubin, "-res-usage", timeout=30)
    match = _CUOBJDUMP_RES.search(out) if out is not None else None
    return (int(match.group(1)), int(match.group(2))) if match else (None, None)


def _occupancy(target: str, limits: TargetLimits, registers: int | None, shared: int,
               num_warps: int, warp_size: int, asm: dict[str, Any]) -> tuple[int | None, str]:
    """Blocks per SM (CU) and the resource that limits them."""
    if shared > limits.smem_per_block:
        return 0, "shared memory (exceeds the per-block limit: the launch fails)"
    bounds: dict[str, int] = {"blocks": limits.blocks_per_sm}
    if parse_target(target)[0] == "cuda":
        bounds["threads"] = limits.threads_per_sm // max(1, num_warps * warp_size)
        if registers:
            per_warp = -(-registers * warp_size // 256) * 256  # allocated per warp, 256 at a time
            bounds["registers"] = (limits.regs_per_sm // per_warp) // max(1, num_warps)
        if shared:
            bounds["shared memory"] = limits.smem_per_sm // (shared + 1024)  # 1 KB reserved/block
    else:
        waves = re.search(r"; Occupancy: (\d+)", asm.get("amdgcn", ""))
        waves_per_simd = int(waves.group(1)) if waves else 8
        bounds["registers"] = (4 * waves_per_simd) // max(1, num_warps)
        if shared:
            bounds["shared memory"] = limits.smem_per_sm // shared
    limiter = min(bounds, key=lambda k: bounds[k])
    return bounds[limiter], limiter


# -- errors -------------------------------------------------------------------------------


def _function_of(src: str | None, extracted: Extracted, lines_of: dict[str, str]) -> str | None:
    """Which kept function a CompilationError's source is (None: Triton's own library)."""
    if not src:
        return None
    match = re.search(r"^\s*def\s+(\w+)\s*\(", src, re.MULTILINE)
    if match is None or match.group(1) not in extracted.def_points:
        return None
    name = match.group(1)
    return name if lines_of.get(name, "").strip() == match.group(0).strip() or \
        lines_of.get(name, "").strip().startswith(match.group(0).strip()) else None


class _Where:
    """Maps what the compiler says about the cut-out module (its temporary file, its line
    numbers) onto the user's file, so no message names a worker's scratch path."""

    def __init__(self, extracted: Extracted, module_file: str, user_path: str) -> None:
        self.extracted = extracted
        self.module_file = module_file
        self.user = user_path

    def line(self, line: int) -> str:
        mapped = self.extracted.to_original(line, 0)
        return str(mapped[0]) if mapped is not None else "?"

    def text(self, value: str) -> str:
        module = re.escape(self.module_file)
        base = re.escape(os.path.basename(self.module_file))
        value = re.sub(rf'File "{module}", line (\d+)',
                       lambda m: f'File "{self.user}", line {self.line(int(m.group(1)))}', value)
        value = re.sub(rf"{module}:(\d+):(\d+)", lambda m: self._point(int(m.group(1)), int(m.group(2))), value)
        value = re.sub(rf"\({base}, line (\d+)\)", lambda m: f"({self.user}, line {self.line(int(m.group(1)))})",
                       value)
        value = value.replace(self.module_file, self.user)
        folder = os.path.dirname(self.module_file)
        if folder and folder != os.sep:
            value = value.replace(folder, "<worker scratch>")
        return value.replace(os.path.basename(self.module_file), os.path.basename(self.user))

    def _point(self, line: int, col: int) -> str:
        mapped = self.extracted.to_original(line, max(col - 1, 0))
        return f"{self.user}:{mapped[0]}:{mapped[1] + 1}" if mapped is not None else f"{self.user}:?"


def _chain_report_text(chain: list[BaseException], where: _Where, located: dict[int, list[int]]) -> str:
    """The chain of errors as text; a CompilationError's `at L:C:` (relative to its function)
    becomes the user's file, line and column."""
    parts = []
    for item in chain:
        body = str(item)
        start = located.get(id(item))
        if start is not None:
            body = re.sub(r"^at \d+:\d+:", f"at {where.user}:{start[0] + 1}:{start[1] + 1}:", body, count=1)
        parts.append(f"{type(item).__name__}: {body}")
    return where.text("\n".join(parts))


_NAME_ERROR = re.compile(r"NameError\(['\"](?:name )?'?(\w+)'? is not defined")


def _error_report(error: BaseException, native: str, where: _Where, source_lines: list[str],
                  version: tuple[int, int] | None) -> dict[str, Any]:
    from triton.compiler.errors import CompilationError

    extracted = where.extracted
    chain = _chain(error)
    root = chain[-1]
    lines_of = {name: source_lines[row] if row < len(source_lines) else ""
                for name, (row, _) in extracted.def_points.items()}
    located: list[dict[str, Any]] = []
    starts: dict[int, list[int]] = {}
    for item in chain:
        if not isinstance(item, CompilationError):
            continue
        node = getattr(item, "node", None)
        name = _function_of(getattr(item, "src", None), extracted, lines_of)
        if name is None or node is None or not hasattr(node, "lineno"):
            continue
        def_row, def_col = extracted.def_points[name]
        start = [def_row + node.lineno - 1, node.col_offset + def_col]
        end_line = getattr(node, "end_lineno", None) or node.lineno
        end_col = getattr(node, "end_col_offset", None)
        end = [def_row + end_line - 1, (end_col if end_col is not None else node.col_offset) + def_col]
        located.append({"function": name, "range": {"start": start, "end": end}})
        starts[id(item)] = start
    message = ""
    for item in reversed(chain):
        if isinstance(item, CompilationError):
            message = getattr(item, "error_message", None) or ""
            if message:
                break
        else:
            message = f"{type(item).__name__}: {item}" if str(item) else type(item).__name__
            break
    mlir: list[dict[str, Any]] = []
    for match in _MLIR_ERROR.finditer(native):
        entry: dict[str, Any] = {"text": where.text(match.group("msg")), "file": where.text(match.group("file"))}
        if os.path.basename(match.group("file")) == os.path.basename(where.module_file):
            mapped = extracted.to_original(int(match.group("line")), int(match.group("col")) - 1)
            if mapped is not None:
                row = mapped[0] - 1
                entry["range"] = {"start": [row, mapped[1]], "end": [row, mapped[1] + 1]}
        mlir.append(entry)
    if mlir and (not message or "PassManager" in message or "during parsing" in message):
        message = "; ".join(m["text"] for m in mlir)
    elif mlir:
        message += "\n" + "\n".join(m["text"] for m in mlir)
    primary = located[-1] if located else None
    if primary is None:
        primary = next(({"function": None, "range": m["range"]} for m in mlir if "range" in m), None)
    related = [
        {"function": loc["function"], "range": loc["range"],
         "message": f"called from `{loc['function']}` here"}
        for loc in reversed(located[:-1])
    ]
    full = _machine_paths(_chain_report_text(chain, where, starts) + ("\n" + where.text(native) if native else ""))
    message = _machine_paths(message)
    if any(type(item).__name__ == "PTXASError" for item in chain):  # the assembler's failure, named
        message = f"ptxas, NVIDIA's assembler, failed on this Config (a compiler failure, not a Triton error): {message}"
    report = {
        "type": type(root).__name__,
        # Every exception class in the chain: Triton's autotuner prunes a Config that fails with
        # OutOfResources, CompileTimeAssertionFailure or PTXASError (reports.py reads these).
        "chain_types": [type(item).__name__ for item in chain],
        "message": where.text(message.strip()) or type(root).__name__,
        "function": primary["function"] if primary else None,
        "range": primary["range"] if primary else None,
        "related": related,
        "mlir": mlir,
        "rules": match_rules(full, version),
        "text": full[:_MAX_TEXT],
    }
    # A name the cut-out module lacks because host code computes it: the tool's limit, not the
    # kernel's error (the kernel is checked when it runs instead).
    missing = _NAME_ERROR.search(message)
    if missing is not None and missing.group(1) in extracted.unresolved:
        name = missing.group(1)
        why = next((note for note in extracted.notes if f"`{name}`" in note), f"`{name}` is left out")
        report["unresolved"] = name
        report["message"] = f"cannot compile ahead of time: {why}, and the kernel uses it"
    return report


_TEMPORARY_PATH = re.compile(r"(?:" + "|".join(re.escape(p) for p in sorted({tempfile.gettempdir(), "/tmp"}, key=len, reverse=True))
                             + r")/tmp[a-z0-9_]{6,}[^\s'\"`:,)]*")
"""A file Python's `tempfile` named (ptxas's input and output, `/tmp/tmpab12cd34.ptx`); never a
user's file, which the messages name on purpose."""


def _machine_paths(text: str) -> str:
    """`text` with the compiler's temporary files named as such: they mean nothing to the
    reader and change on every run."""
    return _TEMPORARY_PATH.sub("<temporary file>", text)


# -- the job ------------------------------------------------------------------------------


def _module_path(extracted: Extracted, scratch: Path) -> Path:
    digest = hashlib.sha1(extracted.text.encode()).hexdigest()[:16]
    return scratch / f"_tritonsmith_kernel_{digest}.py"


def _import_extracted(extracted: Extracted, scratch: Path) -> tuple[Any, Path]:
    path = _module_path(extracted, scratch)
    name = path.stem
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path) \
            and path.exists():
        return sys.modules[name], path
    path.write_text(extracted.text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module, path


def _import_error(error: BaseException, where: _Where, path: Path) -> dict[str, Any]:
    """An error raised while importing the extracted module, mapped to the original file; a
    syntax error is said as one, at its line."""
    extracted = where.extracted
    rng: dict[str, Any] | None = None
    if isinstance(error, SyntaxError) and error.lineno and error.filename == str(path):
        mapped = extracted.to_original(error.lineno, max(0, (error.offset or 1) - 1))
        if mapped is not None:
            rng = {"start": [mapped[0] - 1, mapped[1]], "end": [mapped[0] - 1, mapped[1] + 1]}
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if rng is not None:
            break
        if frame.filename == str(path) and frame.lineno is not None:
            mapped = extracted.to_original(frame.lineno, 0)
            if mapped is not None:
                rng = {"start": [mapped[0] - 1, 0], "end": [mapped[0] - 1, 0]}
    text_ = where.text(_chain_text(error))
    if isinstance(error, SyntaxError):
        line = f" at line {rng['start'][0] + 1}" if rng is not None else ""
        message = f"syntax error{line}: {error.msg}"
    else:
        message = where.text(f"{type(error).__name__}: {error}")
    return {"type": type(error).__name__, "message": message,
            "function": None, "range": rng, "related": [], "mlir": [],
            "rules": match_rules(text_), "text": text_[:_MAX_TEXT]}


def _ast_source(fn: Any, signature: dict[str, str], constexprs: dict[str, Any]) -> Any:
    """An ASTSource for whichever API the installed Triton has (checked, not assumed)."""
    from triton.compiler import ASTSource

    params = inspect.signature(ASTSource.__init__).parameters
    if "constexprs" in params:  # 3.3+: names as keys, constexprs listed in the signature
        return ASTSource(fn, signature, constexprs=constexprs)
    # Older releases: indices as keys, constexprs out of the signature and in `constants`.
    names = list(fn.arg_names)
    sig = {names.index(k): v for k, v in signature.items() if v != "constexpr"}
    constants = {names.index(k): v for k, v in constexprs.items()}
    return ASTSource(fn, sig, constants=constants)


def _triton_version() -> tuple[str, tuple[int, int] | None]:
    import triton

    version = getattr(triton, "__version__", "")
    match = re.match(r"(\d+)\.(\d+)", version)
    return version, (int(match.group(1)), int(match.group(2))) if match else None


_WARM_SOURCE = """
import triton
import triton.language as tl


@triton.jit
def warm_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)


def launch(x):
    warm_kernel[(1,)](x, x.numel(), BLOCK=128)
"""


def warm() -> None:
    """A compile job's first-use costs paid before one is waiting (`WorkerPool.prestart`): a
    fresh worker's first compile takes 0.3-0.4 s more than its second (the compiler's set-up),
    the whole of a small kernel's compile. Compiles a vector add for sm_80 in a scratch folder."""
    with contextlib.suppress(Exception):
        handle_compile({"source": _WARM_SOURCE, "path": "warm.py", "kernel": "warm_kernel", "targets": ["sm_80"]})


def handle_compile(payload: dict[str, Any]) -> dict[str, Any]:
    """Compile `payload["kernel"]` of `payload["source"]` for every target and scenario.

    Payload keys: source, path, kernel, targets (default ["sm_90"]), frontend_only (run only
    Triton's code generator: its errors, no binary or resources), scratch (a directory this
    job may write; without one, a temporary folder removed when the job ends, whatever way it
    ends). See the module docstring and docs for the result's keys."""
    if payload.get("scratch"):
        return _compile_in(payload, Path(payload["scratch"]))
    scratch = Path(tempfile.mkdtemp(prefix="tritonsmith-compile-"))
    try:
        return _compile_in(payload, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _compile_in(payload: dict[str, Any], scratch: Path) -> dict[str, Any]:
    started = time.perf_counter()
    source: str = payload["source"]
    kernel_name: str = payload["kernel"]
    targets: list[str] = list(payload.get("targets") or ["sm_90"])
    scratch.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TRITON_CACHE_DIR", str(scratch / "triton-cache"))
    result: dict[str, Any] = {
        "ok": False, "kernel": kernel_name, "path": payload.get("path"), "triton_version": None,
        "targets": targets, "extracted": None, "results": [], "skipped": [], "notes": [],
        "error": None, "seconds": 0.0,
    }
    try:
        extracted = extract_kernel_module(source, kernel_name)
    except ExtractionError as error:
        result["error"] = {"type": "ExtractionError", "message": str(error), "range": None,
                           "function": None, "related": [], "mlir": [], "rules": [], "text": str(error)}
        return result
    result["extracted"] = {"helpers": extracted.helpers, "functions": extracted.functions, "constants": extracted.constants,
                           "imports": extracted.imports, "notes": extracted.notes,
                           "unresolved": extracted.unresolved, "file": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Triton's deprecation chatter is not the user's error
        try:
            import triton
            from triton.backends.compiler import GPUTarget
        except Exception as error:  # noqa: BLE001
            result["error"] = {"type": type(error).__name__, "message": f"cannot import triton: {error}",
                               "range": None, "function": None, "related": [], "mlir": [],
                               "rules": [], "text": _chain_text(error)}
            return result
        version_text, version = _triton_version()
        result["triton_version"] = version_text
        module_path = _module_path(extracted, scratch)
        try:
            with _capture_fd2():
                module, module_path = _import_extracted(extracted, scratch)
        except Exception as error:  # noqa: BLE001
            result["error"] = _import_error(error, _Where(extracted, str(module_path),
                                                          str(payload.get("path") or "the file")), module_path)
            return result
        result["extracted"]["file"] = str(module_path)
        fn = getattr(module, kernel_name, None)
        while fn is not None and not isinstance(fn, triton.runtime.JITFunction):
            fn = getattr(fn, "fn", None)
        if fn is None:
            result["error"] = {"type": "ExtractionError", "range": None, "function": None,
                               "message": f"{kernel_name} is not a JITFunction after import",
                               "related": [], "mlir": [], "rules": [], "text": ""}
            return result
        document = Document(source)
        index = index_module(document.root)
        kernel = index.kernel(kernel_name)
        assert kernel is not None  # extraction found it in the same text
        scenarios = KernelContext(kernel, index, document.source, None).compile_scenarios()
        pointers = _pointer_params(kernel, index)
        source_lines = source.splitlines()
        constexpr_flags = {p.name: bool(p.is_constexpr) for p in fn.params}
        typer = LaunchTyper(document, index)
        recorded = {str(k): str(v) for k, v in (payload.get("arg_types") or {}).items()}
        scenarios = _settled(scenarios, payload.get("constexpr_values") or {})
        if payload.get("launches"):  # exactly the launches a profiled run made (predict.py)
            scenarios = _profiled(scenarios, list(payload["launches"]), constexpr_flags)
        typed = [_typed(constexpr_flags, scenario, typer, pointers, recorded) for scenario in scenarios]
        report_dir = Path(os.environ["TRITON_CACHE_DIR"]) / "tritonsmith-resources"
        where = _Where(extracted, str(module_path), str(payload.get("path") or "the file"))
        for target in targets:
            try:
                backend, arch, warp_size = parse_target(target)
            except ValueError as error:
                result["skipped"].append({"target": target, "config": None, "reason": str(error)})
                continue
            for scenario, types in zip(scenarios, typed, strict=True):
                if scenario.missing:
                    result["skipped"].append({
                        "target": target, "config": scenario.label,
                        "config_index": scenario.index, "origin": _node_range(scenario.origin),
                        "reason": "constexpr value unknown statically: " + ", ".join(scenario.missing),
                        "missing": list(scenario.missing),
                    })
                    continue
                result["results"].append(_compile_one(
                    fn, triton, GPUTarget(backend, arch, warp_size), target, scenario, constexpr_flags,
                    types, where, source_lines, version, report_dir, bool(payload.get("frontend_only")),
                ))
                if payload.get("launches"):
                    result["results"][-1]["launch_key"] = scenario.label
    if not result["results"] and not result["skipped"]:
        result["notes"].append("no target compiled")
    # Configs skipped because a constexpr is known only at run time are not failures: the
    # kernel is then checked when it runs (verification), not here.
    result["ok"] = bool(result["results"] or result["skipped"]) and all(
        r["ok"] and not (r["resources"] or {}).get("exceeds_shared") for r in result["results"]
    ) and all(s["config"] is not None for s in result["skipped"])  # an unknown target is an error
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


def _frontend(triton: Any, gpu_target: Any, options: dict[str, Any]) -> Callable[[Any], Any] | None:
    """A function running only Triton's frontend (`ASTSource.make_ir`: the code generator that
    raises the type, shape and constexpr errors) on a source, set up as `triton.compile` sets it
    up; None where this Triton's internals differ from what is expected (a full compile then)."""
    try:
        from triton._C.libtriton import ir
        from triton.compiler.compiler import make_backend

        backend = make_backend(gpu_target)
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        module_map = backend.get_module_map()
    except Exception:  # noqa: BLE001 - an API this code does not know: compile fully
        return None

    def run(src: Any) -> Any:
        extra = src.parse_options() if hasattr(src, "parse_options") else {}
        parsed = backend.parse_options(dict(options, **extra))
        codegen = backend.get_codegen_implementation(parsed)
        if "target" in inspect.signature(src.make_ir).parameters:
            return src.make_ir(gpu_target, parsed, codegen, module_map, context)
        return src.make_ir(parsed, codegen, module_map, context)

    return run


def _compile_one(fn: Any, triton: Any, gpu_target: Any, target: str, scenario: CompileScenario,
                 constexpr_flags: dict[str, bool], types: _Typed, where: _Where,
                 source_lines: list[str], version: tuple[int, int] | None,
                 report_dir: Path, frontend_only: bool = False) -> dict[str, Any]:
    started = time.perf_counter()
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for name, is_constexpr in constexpr_flags.items():
        if is_constexpr:
            signature[name] = "constexpr"
            constexprs[name] = scenario.constexprs.get(name)
        else:
            signature[name] = types.signature[name]
            if name in types.constexprs:
                constexprs[name] = types.constexprs[name]
    assumed = list(types.assumed)
    options = dict(scenario.options)
    if gpu_target.backend != "cuda":
        options.pop("maxnreg", None)
    entry: dict[str, Any] = {
        "target": target, "config": scenario.label, "config_index": scenario.index,
        "origin": _node_range(scenario.origin), "constexprs": constexprs, "signature": signature,
        "assumed": assumed, "typed_from": dict(types.sources), "options": options, "ok": False, "error": None, "resources": None,
        "launch_error": None, "seconds": 0.0,
    }
    stdout = io.StringIO()
    knobs = getattr(triton, "knobs", None)
    nvidia_knobs = getattr(knobs, "nvidia", None)
    previous = getattr(nvidia_knobs, "dump_ptxas_log", None)
    frontend = _frontend(triton, gpu_target, options) if frontend_only else None
    try:
        with _capture_fd2() as native, contextlib.redirect_stdout(stdout):
            if nvidia_knobs is not None and previous is not None:
                nvidia_knobs.dump_ptxas_log = True
            try:
                if frontend is not None:  # Triton's code generator only: its errors, no binary
                    compiled = frontend(_ast_source(fn, signature, constexprs))
                else:
                    compiled = triton.compile(_ast_source(fn, signature, constexprs),
                                              target=gpu_target, options=options)
                failure: BaseException | None = None
            except Exception as error:  # noqa: BLE001 - every compiler failure is a result
                failure = error
            finally:
                if nvidia_knobs is not None and previous is not None:
                    nvidia_knobs.dump_ptxas_log = previous
    except Exception as error:  # noqa: BLE001 - capture itself failed
        failure = error
        native = io.StringIO()
    if failure is not None:
        entry["error"] = _error_report(failure, native.getvalue(), where, source_lines, version)
        if entry["error"]["range"] is None:
            entry["error"]["range"] = entry["origin"]
    elif frontend is not None:
        entry["ok"] = True
        entry["frontend_only"] = True  # no resources: nothing past the frontend ran
    else:
        entry["ok"] = True
        entry["resources"] = _resources(compiled, target, stdout.getvalue(), report_dir)
        if entry["resources"]["exceeds_shared"]:
            res = entry["resources"]
            entry["launch_error"] = (
                f"{scenario.label} needs {res['shared']} bytes of shared memory; {target} allows "
                f"{res['shared_limit']} per block, so the launch would fail (OutOfResources)"
            )
    entry["seconds"] = round(time.perf_counter() - started, 3)
    return entry
