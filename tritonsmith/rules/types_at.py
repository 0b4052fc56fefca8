"""What the editor shows of a name's inferred type: `acc: fp32[BLOCK_M=64, BLOCK_N=128]` for
each launch configuration (analysis/infer.py through the kernel's `KernelContext`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tree_sitter import Node

from ..analysis.index import Kernel, ModuleIndex
from ..analysis.syntax import text
from ..analysis.values import UNKNOWN
from .context import KernelContext, Scenario
from .findings import Span

__all__ = ["NameTypes", "RecordedLaunches", "assignment_types", "name_types"]

MAX_SHOWN = 6  # configurations listed in one hover


@dataclass(frozen=True)
class RecordedLaunches:
    """What the last check run recorded at each kernel's launches, for what the source leaves
    unknown: kernel -> parameter -> signature type (`*fp16`), and kernel -> constexpr -> value
    (at the check's sizes, which may be scaled down)."""

    types: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    constexprs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class NameTypes:
    """A name in a kernel and its type in each configuration: (label, rendered type)."""

    name: str
    span: Span
    kernel: str
    by_configuration: tuple[tuple[str, str], ...]
    recorded: str = ""  # what came from the last check run's launches, when anything did

    def markdown(self) -> str:
        renders = {render for _, render in self.by_configuration}
        if len(renders) == 1:
            lines = [f"{self.name}: {self.by_configuration[0][1]}"]
            if len(self.by_configuration) > 1:
                lines.append(f"# the same in all {len(self.by_configuration)} configurations of {self.kernel}")
        else:
            lines = [f"{self.name}: {render}  # {label}" for label, render in self.by_configuration]
        if self.recorded:
            lines.append(f"# as launched in the last check run: {self.recorded}")
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
               version: tuple[int, int] | None = None, recorded: RecordedLaunches | None = None) -> NameTypes | None:
    """The inferred types of the identifier at `point` (row, byte column) inside a kernel, or
    None when there is no such name or nothing is known of it. What the source leaves unknown
    (a pointer's element type, a block computed at run time) comes from `recorded`, the last
    check run's launches, and the hover says so."""
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
        used: dict[str, str] = {}
        for i in chosen[:MAX_SHOWN]:
            scenario, filled = _as_recorded(context, scenarios[i], recorded)
            types = context.types(scenario, values=True) if not filled else \
                context.types_as_launched(scenario, (recorded.types if recorded else {}).get(kernel.name, {}))
            value = types.at(node)
            if value is not None and value.known:
                shown.append((_label(context, i), value.render()))
                used.update(filled)
        if not shown:
            return None
        noted = ", ".join(what for _, what in sorted(used.items()))
        return NameTypes(text(node), Span.of(node), kernel.name, tuple(shown), noted)
    finally:
        context.close()


def _as_recorded(context: KernelContext, scenario: Scenario,
                 recorded: RecordedLaunches | None) -> tuple[Scenario, dict[str, str]]:
    """`scenario` with the constexprs it leaves unknown set as the last check run launched
    them, and what was filled in from that run ({name: "x_ptr: *fp32" or "BLOCK=128 (at the
    check's sizes)"}); `scenario` itself and {} when the run adds nothing."""
    if recorded is None:
        return scenario, {}
    name = context.kernel.name
    static = context.param_types(scenario)
    filled = {param: f"{param}: {kind}" for param, kind in recorded.types.get(name, {}).items()
              if param not in static and context.kernel.param(param) is not None}
    env = dict(scenario.env)
    for param, value in recorded.constexprs.get(name, {}).items():
        if env.get(param, UNKNOWN) is UNKNOWN and isinstance(value, (int, bool)):
            env[param] = value
            filled[param] = f"{param}={value} (at the check's sizes)"
    if not filled:
        return scenario, {}
    return replace(scenario, env=env), filled


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
