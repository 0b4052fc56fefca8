"""What the editor shows of a name's inferred type: `acc: fp32[BLOCK_M=64, BLOCK_N=128]` for
each launch configuration (analysis/infer.py through the kernel's `KernelContext`)."""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from ..analysis.index import Kernel, ModuleIndex
from ..analysis.syntax import text
from .context import KernelContext
from .findings import Span

__all__ = ["NameTypes", "assignment_types", "name_types"]

MAX_SHOWN = 6  # configurations listed in one hover


@dataclass(frozen=True)
class NameTypes:
    """A name in a kernel and its type in each configuration: (label, rendered type)."""

    name: str
    span: Span
    kernel: str
    by_configuration: tuple[tuple[str, str], ...]

    def markdown(self) -> str:
        renders = {render for _, render in self.by_configuration}
        if len(renders) == 1:
            lines = [f"{self.name}: {self.by_configuration[0][1]}"]
            if len(self.by_configuration) > 1:
                lines.append(f"# the same in all {len(self.by_configuration)} configurations of {self.kernel}")
        else:
            lines = [f"{self.name}: {render}  # {label}" for label, render in self.by_configuration]
        return "```python\n" + "\n".join(lines) + "\n```"


def _kernel_at(index: ModuleIndex, node: Node) -> Kernel | None:
    for kernel in index.kernels:
        if kernel.node.start_byte <= node.start_byte and node.end_byte <= kernel.node.end_byte:
            return kernel
    return None


def _label(context: KernelContext, scenario_index: int) -> str:
    scenario = context.scenarios()[scenario_index]
    if scenario.origin is None:
        return "defaults"
    where = f"line {scenario.origin.start_point[0] + 1}"
    if scenario.label == "this launch":
        return f"launch at {where}"
    return f"Config at {where}"


def name_types(root: Node, source: bytes, index: ModuleIndex, point: tuple[int, int],
               version: tuple[int, int] | None = None) -> NameTypes | None:
    """The inferred types of the identifier at `point` (row, byte column) inside a kernel, or
    None when there is no such name or nothing is known of it."""
    node = root.named_descendant_for_point_range(point, point)
    if node is None or node.type != "identifier":
        return None
    kernel = _kernel_at(index, node)
    if kernel is None or kernel.body is None:
        return None
    context = KernelContext(kernel, index, source, version)
    try:
        scenarios = context.scenarios()
        chosen = [i for i, s in enumerate(scenarios) if s.origin is not None] or [0]
        shown: list[tuple[str, str]] = []
        for i in chosen[:MAX_SHOWN]:
            value = context.types(scenarios[i], values=True).at(node)
            if value is not None and value.known:
                shown.append((_label(context, i), value.render()))
        if not shown:
            return None
        return NameTypes(text(node), Span.of(node), kernel.name, tuple(shown))
    finally:
        context.close()


def assignment_types(root: Node, source: bytes, index: ModuleIndex, rows: tuple[int, int],
                     version: tuple[int, int] | None = None) -> list[tuple[Span, str]]:
    """For each name assigned in a kernel between `rows` (inclusive), its inferred type in the
    kernel's first launch site or Config (the defaults when there is none): (the name's span,
    the rendered type). Unknown values are left out."""
    out: list[tuple[Span, str]] = []
    for kernel in index.kernels:
        body = kernel.body
        if body is None or body.end_point[0] < rows[0] or body.start_point[0] > rows[1]:
            continue
        context = KernelContext(kernel, index, source, version)
        try:
            scenarios = context.typed_scenarios()
            if not scenarios:
                continue
            types = context.types(scenarios[0], values=True)
            for node in context.nodes("assignment", "augmented_assignment"):
                target = node.child_by_field_name("left")
                if target is None or target.type != "identifier" or not rows[0] <= target.start_point[0] <= rows[1]:
                    continue
                if node.type == "assignment" and node.child_by_field_name("type") is not None:
                    continue  # `x: tl.constexpr = 8` already says what it is
                value = types.at(target)
                if value is not None and value.known:
                    out.append((Span.of(target), value.render()))
        finally:
            context.close()
    return out
