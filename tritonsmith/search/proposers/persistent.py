"""Persistent programs for a flat elementwise kernel (a regenerate transformation, for GPU
searches).

A launch of `cdiv(n, BLOCK)` programs for a large `n` makes the GPU schedule hundreds of
thousands of short programs. A persistent kernel launches a few per SM and loops over the tiles
(`for pid in range(tl.program_id(0), num_tiles, tl.num_programs(0))`): the per-program setup
runs once per SM slot instead of once per tile. The grid becomes
`min(cdiv(n, BLOCK), 4 * the SM count)`, read from the device of the launch's first argument.

Preconditions: the kernel is flat and elementwise with the usual preamble (`pid =
tl.program_id(0)`, `offsets = pid * BLOCK + tl.arange(0, BLOCK)`, `mask = offsets < n`; see
fusion.py) and reads its program id and block nowhere else; every launch's grid is
`(triton.cdiv(N, meta["BLOCK"]),)` (inline or a lambda only this kernel's launches use) with a
tensor as its first argument, in a module that imports `torch`; `num_tiles` is a free name.

The interpreter runs programs one after another, so there is nothing to gain there: offered
only when a GPU times candidates. Text only.
"""

from __future__ import annotations

import re

from ...analysis import Document, index_module
from ...analysis.syntax import line_span, text
from .fusion import flat_body, flat_preamble
from .grids import grid_lambda

__all__ = ["persistent_programs"]

PROGRAMS_PER_SM = 4
_GRID_1D = re.compile(r"""\(triton\.cdiv\((?P<n>[^,()]+(?:\([^()]*\))?),meta\[["'](?P<block>\w+)["']\]\),\)""")


def persistent_programs(source: str, kernel_name: str) -> str | None:
    document = Document(source)
    index = index_module(document.root)
    kernel = index.kernel(kernel_name)
    if kernel is None or not kernel.launches or "torch" not in index.imports.names:
        return None
    body = flat_body(kernel, index)
    preamble = flat_preamble(body, index) if body is not None else None
    if body is None or preamble is None or re.search(r"\bnum_tiles\b", text(kernel.node)):
        return None
    statements, offsets, mask, n = preamble
    pids = [name for name in statements if name not in (offsets, mask)]
    if len(pids) != 1:
        return None
    pid = pids[0]
    if body.statements[0].id != statements[pid].id:
        return None  # the loop starts at the program id: nothing may come before it
    block = re.sub(r"\s+", "", text(statements[offsets].named_children[0].child_by_field_name("right")))
    block_name = re.fullmatch(rf"{pid}\*(\w+)\+tl\.arange\(0,\1\)", block)
    if block_name is None:
        return None
    data = document.source
    edits: list[tuple[int, int, bytes]] = []
    for site in kernel.launches:
        grid = site.grid
        if grid is None or not site.positional or site.positional[0].type != "identifier":
            return None
        expression, own = grid_lambda(site, kernel_name)
        if expression is None or (grid.type == "identifier" and not own):
            return None
        lambda_body = expression.child_by_field_name("body")
        match = _GRID_1D.fullmatch(re.sub(r"\s+", "", text(lambda_body)))
        if lambda_body is None or match is None or match["block"] != block_name[1]:
            return None
        device = text(site.positional[0])
        programs = (f'(min(triton.cdiv({match["n"]}, meta["{match["block"]}"]), '
                    f"{PROGRAMS_PER_SM} * torch.cuda.get_device_properties({device}.device).multi_processor_count),)")
        if any(start == lambda_body.start_byte for start, _, _ in edits):
            continue  # one lambda, several launches
        edits.append((lambda_body.start_byte, lambda_body.end_byte, programs.encode()))
    # The kernel: the preamble's program id becomes the loop's, the rest its body.
    indent = body.indent
    pid_statement = statements[pid]
    loop = (f"{indent}num_tiles = tl.cdiv({n}, {block_name[1]})\n"
            f"{indent}for {pid} in range(tl.program_id(axis=0), num_tiles, tl.num_programs(axis=0)):\n")
    edits.append((*line_span(data, pid_statement), loop.encode()))
    for statement in body.statements:
        if statement.id == pid_statement.id:
            continue
        start, end = line_span(data, statement)
        lines = data[start:end].decode().splitlines(keepends=True)
        edits.append((start, end, "".join("    " + line if line.strip() else line for line in lines).encode()))
    out = data
    for start, end, new in sorted(edits, reverse=True):
        out = out[:start] + new + out[end:]
    return out.decode("utf-8")
