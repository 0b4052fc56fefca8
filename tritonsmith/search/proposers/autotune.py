"""A pruned `triton.autotune` space for a kernel launched with fixed block sizes (a regenerate
transformation, for GPU searches).

The launch's own values come first. A `tl.dot` kernel then gets the output tiles of Triton's
matmul tutorial (64x64 to 128x256, with their warps and stages); any other kernel gets each
block size on its own halved, doubled,
quadrupled and moved 16 and 64 times up (a neighbourhood and a few jumps, not a product: three
block dimensions at six sizes each would be 216 configs to time on every new key), each with `num_warps` scaled to the block's elements
(`elements / 256`, within 1 to 8, as Triton's tutorials size them) unless the launch set its
own. The autotuner times them on the first call for each key: the kernel's runtime scalars (its
sizes and strides; pointers are left out, since the autotuner would key on the tensors
themselves). The launches drop the values the configs now set.

Preconditions: the kernel has no autotune or heuristics; every launch passes the same integer
literals for the blocks it tunes (constexpr parameters named like blocks), and its grid reads
each of them as `meta["NAME"]` (with a grid that ignores a block, a smaller one would leave
elements unprocessed, and an autotuner keeps the fastest config without checking its output).

Under the interpreter only the first config runs (evaluator/cuda_shim.py), which is the launch
as it was, so this is offered only when a GPU times candidates. Text only.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from ...analysis import Document, index_module
from ...analysis.index import Kernel
from ...analysis.syntax import text, walk
from .grids import grid_lambda

__all__ = ["insert_autotune"]

BLOCK_NAME = re.compile(r"BLOCK|TILE|_M$|_N$|_K$", re.IGNORECASE)
OPTIONS = ("num_warps", "num_stages")
MIN_BLOCK, MAX_BLOCK = 16, 8192


def _literal(node: Node) -> int | None:
    if node.type != "integer":
        return None
    try:
        return int(text(node).replace("_", ""), 0)
    except ValueError:
        return None


def insert_autotune(source: str, kernel_name: str) -> str | None:
    document = Document(source)
    index = index_module(document.root)
    kernel = index.kernel(kernel_name)
    if kernel is None or not kernel.launches or kernel.autotune is not None or kernel.heuristics \
            or kernel.wrapper_calls or "triton" not in index.imports.names:
        return None
    constexprs = {p.name for p in kernel.params if p.is_constexpr}
    chosen: dict[str, int] | None = None
    for site in kernel.launches:
        literals = {name: _literal(value) for name, (_, value) in site.keywords.items()
                    if (name in constexprs and BLOCK_NAME.search(name)) or name in OPTIONS}
        if any(v is None for v in literals.values()):
            return None
        # A config may change a block only where the grid follows it: with a fixed grid, a
        # smaller block would leave elements unprocessed, and the autotuner checks nothing.
        # The other blocks (a matmul's BLOCK_K) stay at the launch.
        expression, _ = grid_lambda(site, kernel_name)
        grid = text(expression) if expression is not None else ""
        found = {n: v for n, v in literals.items() if v is not None
                 and (n in OPTIONS or re.search(rf"meta\[[\"']{n}[\"']\]", grid))}
        if not set(found) - set(OPTIONS):
            return None
        if chosen is not None and found != chosen:
            return None
        chosen = found
    assert chosen is not None
    configs = _tile_configs(chosen) if "tl.dot(" in text(kernel.body) and len(set(chosen) - set(OPTIONS)) == 2 \
        else _configs(chosen)
    key = _key(kernel)
    lines = ["@triton.autotune(", "    configs=["]
    for values, options in configs:
        meta = ", ".join(f'"{n}": {v}' for n, v in values.items())
        opts = "".join(f", {n}={v}" for n, v in options.items())
        lines.append(f"        triton.Config({{{meta}}}{opts}),")
    lines += ["    ],", f"    key=[{', '.join(repr(k) for k in key)}],", ")"]
    decorator = "\n".join(lines).replace("'", '"') + "\n"
    data = document.source
    edits: list[tuple[int, int, bytes]] = []
    start = data.rfind(b"\n", 0, kernel.outer.start_byte) + 1
    edits.append((start, start, decorator.encode()))
    for site in kernel.launches:
        arguments = site.node.child_by_field_name("arguments")
        assert arguments is not None
        for name in chosen:
            keyword, _ = site.keywords[name]
            edits.append(_without_argument(data, arguments, keyword))
    out = data
    for begin, end, new in sorted(edits, reverse=True):
        out = out[:begin] + new + out[end:]
    return out.decode("utf-8")


def _configs(chosen: dict[str, int]) -> list[tuple[dict[str, int], dict[str, int]]]:
    """The launch's own values first, then each block alone at ÷2, ×2 and ×4."""
    blocks = {n: v for n, v in chosen.items() if n not in OPTIONS}
    options = {n: v for n, v in chosen.items() if n in OPTIONS}
    out: list[tuple[dict[str, int], dict[str, int]]] = [(blocks, options)]
    for name, value in blocks.items():
        for factor in (0.5, 2, 4, 16, 64):
            size = int(value * factor)
            if not MIN_BLOCK <= size <= MAX_BLOCK:
                continue
            values = {**blocks, name: size}
            elements = 1
            for v in values.values():
                elements *= v
            warps = options.get("num_warps", min(max(elements // 256, 1), 8))
            candidate = (values, {**options, "num_warps": warps})
            if all(candidate[0] != c[0] for c in out):
                out.append(candidate)
    return out


# Output tiles of a `tl.dot` kernel, as Triton's matmul tutorial tunes them: (M, N, warps, stages).
TILES = ((64, 64, 4, 3), (128, 64, 4, 3), (64, 128, 4, 3), (128, 128, 8, 3), (128, 256, 8, 3), (32, 64, 2, 4))


def _tile_configs(chosen: dict[str, int]) -> list[tuple[dict[str, int], dict[str, int]]]:
    """The launch's own tile first, then the tutorial's tiles (the first block the launch passes
    takes the tile's rows, the second its columns)."""
    blocks = [n for n in chosen if n not in OPTIONS]
    options = {n: v for n, v in chosen.items() if n in OPTIONS}
    out: list[tuple[dict[str, int], dict[str, int]]] = [({n: chosen[n] for n in blocks}, options)]
    for m, n, warps, stages in TILES:
        values = {blocks[0]: m, blocks[1]: n}
        if all(values != c[0] for c in out):
            out.append((values, {"num_warps": warps, "num_stages": stages}))
    return out


def _key(kernel: Kernel) -> list[str]:
    """The runtime parameters but pointers: a pointer is the base of a load's or store's address,
    directly or through a local (`x_row = x_ptr + row * stride`)."""
    body = kernel.body
    assert body is not None
    origins: dict[str, str] = {}
    for node in walk(body):
        if node.type == "assignment" and (left := node.child_by_field_name("left")) is not None and left.type == "identifier":
            base = _base(node.child_by_field_name("right"))
            if base is not None:
                origins[text(left)] = base
    pointers: set[str] = set()
    for node in walk(body):
        if node.type == "call" and re.search(r"(^|\.)(load|store|atomic_\w+)$", text(node.child_by_field_name("function"))):
            arguments = node.child_by_field_name("arguments")
            first = arguments.named_children[0] if arguments is not None and arguments.named_children else None
            base = _base(first)
            for _ in range(8):
                if base is None or base not in origins:
                    break
                base = origins[base]
            if base is not None:
                pointers.add(base)
    return [p.name for p in kernel.params if not p.is_constexpr and p.name not in pointers]


def _base(node: Node | None) -> str | None:
    """The leftmost name of a sum (`x_ptr + row * stride + cols` -> `x_ptr`)."""
    while node is not None and node.type in ("binary_operator", "parenthesized_expression"):
        node = node.child_by_field_name("left") if node.type == "binary_operator" else \
            (node.named_children[0] if node.named_children else None)
    return text(node) if node is not None and node.type == "identifier" else None


def _without_argument(data: bytes, arguments: Node, keyword: Node) -> tuple[int, int, bytes]:
    """The edit removing one argument and its comma."""
    children = [c for c in arguments.named_children if c.type != "comment"]
    at = next(i for i, c in enumerate(children) if c.id == keyword.id)
    if at > 0:  # from the end of the previous argument
        return children[at - 1].end_byte, keyword.end_byte, b""
    end = children[1].start_byte if len(children) > 1 else keyword.end_byte
    return keyword.start_byte, end, b""
