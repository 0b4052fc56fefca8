"""Rewrites of `tl.dot` kernels that only a GPU can value (regenerate transformations).

- `group_m`: GROUP_M swizzling. A 2-D grid walks output tiles row by row, so consecutive
  programs share an A row-panel but each loads a new B column-panel; grouping GROUP_M rows of
  tiles together makes the programs that run at the same time reuse both panels from L2. The
  kernel's `pid_m = tl.program_id(0)` and `pid_n = tl.program_id(1)` become the grouped order of
  Triton's matmul tutorial over a 1-D grid, and the launch's grid becomes the product of the two.
- `dot_tf32`: `tl.dot(..., input_precision="ieee")` (or `allow_tf32=False`) runs on TF32
  tensor cores instead, about eight times the fp32 rate on an H100, at about 1e-3 relative error.

The interpreter runs neither faster (it has no L2 and no tensor cores: `tl.dot` is NumPy's
fp32 matmul there, so a TF32 candidate would even verify without showing its error), so the
offline proposer offers them only when candidates are timed and verified on a GPU. Text only.

Preconditions of `group_m`: the kernel calls `tl.dot`, reads `tl.program_id(0)` and
`tl.program_id(1)` once each, as top-level `pid_m = ...` and `pid_n = ...` statements, and
nothing else about the grid; every launch's grid is `(triton.cdiv(M, meta["BLOCK_M"]),
triton.cdiv(N, meta["BLOCK_N"]))` (inline, or a lambda the launcher assigns) with `M` and `N`
passed to the kernel and `BLOCK_M`, `BLOCK_N` its constexprs; the names the rewrite introduces
are free.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from ...analysis import Document, index_module
from ...analysis.index import Kernel, LaunchSite
from ...analysis.syntax import line_span, text, walk
from .grids import grid_lambda

__all__ = ["dot_tf32", "group_m"]

GROUP_M = 8
_NEW_NAMES = ("pid", "num_pid_m", "num_pid_n", "num_pid_in_group", "group_id", "first_pid_m", "group_size_m", "GROUP_M")
# `(triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))`, spaces removed.
_GRID_2D = re.compile(r"""\(triton\.cdiv\((?P<m>[^,()]+),meta\[["'](?P<bm>\w+)["']\]\),"""
                      r"""triton\.cdiv\((?P<n>[^,()]+),meta\[["'](?P<bn>\w+)["']\]\),?\)""")


def group_m(source: str, kernel_name: str) -> str | None:
    document = Document(source)
    index = index_module(document.root)
    kernel = index.kernel(kernel_name)
    if kernel is None or kernel.body is None or not kernel.launches or kernel.autotune is not None:
        return None
    body_text = text(kernel.body)
    if "tl.dot(" not in body_text or "num_programs" in body_text:
        return None
    if any(re.search(rf"\b{name}\b", text(kernel.node)) for name in _NEW_NAMES):
        return None
    program_ids = [n for n in walk(kernel.body) if n.type == "call" and index.imports.qualify(n.child_by_field_name("function")) == "triton.language.program_id"]
    if len(program_ids) != 2:
        return None
    axes: dict[int, Node] = {}  # axis -> its `pid_x = tl.program_id(axis)` statement
    for call in program_ids:
        statement = call.parent.parent if call.parent is not None else None
        if call.parent is None or call.parent.type != "assignment" or statement is None \
                or statement.parent is None or statement.parent.id != kernel.body.id:
            return None
        axis = re.sub(r"\s+|axis=", "", text(call.child_by_field_name("arguments")))[1:-1]
        if axis not in ("0", "1") or call.parent.child_by_field_name("right") != call:
            return None
        axes[int(axis)] = statement
    if set(axes) != {0, 1}:
        return None
    pid_m, pid_n = (text(axes[a].named_children[0].child_by_field_name("left")) for a in (0, 1))
    params = {p.name: p for p in kernel.params}
    data = document.source
    edits: list[tuple[int, int, bytes]] = []
    sizes: tuple[str, str, str, str] | None = None
    for site in kernel.launches:
        found = _grid_sizes(site, kernel_name)
        if found is None:
            return None
        (m_arg, block_m), (n_arg, block_n), target, named = found
        m, n = _param_for(kernel, site, m_arg), _param_for(kernel, site, n_arg)
        if m is None or n is None or block_m not in params or block_n not in params \
                or not params[block_m].is_constexpr or not params[block_n].is_constexpr:
            return None
        if sizes is not None and sizes != (m, n, block_m, block_n):
            return None
        sizes = (m, n, block_m, block_n)
        one_d = f'(triton.cdiv({m_arg}, meta["{block_m}"]) * triton.cdiv({n_arg}, meta["{block_n}"]),)'
        if any(start == target.start_byte for start, _, _ in edits):
            pass  # a grid lambda two launches share, rewritten once
        else:
            edits.append((target.start_byte, target.end_byte, (one_d if named else f"lambda meta: {one_d}").encode()))
        arguments = site.node.child_by_field_name("arguments")
        if arguments is None or not arguments.named_children:
            return None
        last = arguments.named_children[-1]
        edits.append((last.end_byte, last.end_byte, f", GROUP_M={GROUP_M}".encode()))
    assert sizes is not None
    m, n, block_m, block_n = sizes
    first, second = sorted(axes.values(), key=lambda s: s.start_byte)
    indent = data[data.rfind(b"\n", 0, first.start_byte) + 1:first.start_byte].decode()
    swizzle = "\n".join(indent + line for line in (
        "# GROUP_M rows of tiles at a time: programs running together share A and B panels in L2.",
        "pid = tl.program_id(axis=0)",
        f"num_pid_m = tl.cdiv({m}, {block_m})",
        f"num_pid_n = tl.cdiv({n}, {block_n})",
        "num_pid_in_group = GROUP_M * num_pid_n",
        "group_id = pid // num_pid_in_group",
        "first_pid_m = group_id * GROUP_M",
        "group_size_m = min(num_pid_m - first_pid_m, GROUP_M)",
        f"{pid_m} = first_pid_m + ((pid % num_pid_in_group) % group_size_m)",
        f"{pid_n} = (pid % num_pid_in_group) // group_size_m",
    )) + "\n"
    edits.append((*line_span(data, first), swizzle.encode()))
    edits.append((*line_span(data, second), b""))
    parameters = kernel.node.child_by_field_name("parameters")
    assert parameters is not None
    closing = parameters.end_byte - 1  # the `)`
    edits.append((closing, closing, b", GROUP_M: tl.constexpr"))
    out = data
    for start, end, new in sorted(edits, reverse=True):
        out = out[:start] + new + out[end:]
    return out.decode("utf-8")


def _grid_sizes(site: LaunchSite, kernel_name: str) -> tuple[tuple[str, str], tuple[str, str], Node, bool] | None:
    """((M, BLOCK_M), (N, BLOCK_N)) of a 2-D `cdiv` grid, what to rewrite, and whether that is a
    named lambda's body (a local that only this kernel's launches use) rather than the grid at
    the launch."""
    expression, own = grid_lambda(site, kernel_name)
    grid = site.grid
    if expression is None or grid is None:
        return None
    named = own and grid.type == "identifier"  # else the grid at the launch becomes a new lambda
    body = expression.child_by_field_name("body")
    match = _GRID_2D.fullmatch(re.sub(r"\s+", "", text(body)))
    if match is None or body is None:
        return None
    return (match["m"], match["bm"]), (match["n"], match["bn"]), (body if named else grid), named


def _param_for(kernel: Kernel, site: LaunchSite, argument: str) -> str | None:
    """The kernel parameter the launch binds to an argument with this text."""
    params = [p.name for p in kernel.params]
    for name, value in zip(params, site.positional):
        if re.sub(r"\s+", "", text(value)) == argument:
            return name
    for name, (_, value) in site.keywords.items():
        if name in params and re.sub(r"\s+", "", text(value)) == argument:
            return name
    return None


_IEEE = re.compile(r"""input_precision\s*=\s*["']ieee["']|allow_tf32\s*=\s*False""")


def dot_tf32(source: str, kernel_name: str) -> str | None:
    """The kernel's `tl.dot` calls on TF32 instead of IEEE fp32 (None where none asks for IEEE)."""
    document = Document(source)
    index = index_module(document.root)
    kernel = index.kernel(kernel_name)
    if kernel is None or kernel.body is None:
        return None
    dots = [n for n in walk(kernel.body) if n.type == "call"
            and index.imports.qualify(n.child_by_field_name("function")) == "triton.language.dot" and _IEEE.search(text(n))]
    if not dots:
        return None
    data = document.source
    for call in sorted(dots, key=lambda n: n.start_byte, reverse=True):
        new = _IEEE.sub(lambda m: 'input_precision="tf32"' if m.group(0).startswith("input") else "allow_tf32=True", text(call))
        data = data[:call.start_byte] + new.encode() + data[call.end_byte:]
    return data.decode("utf-8")
