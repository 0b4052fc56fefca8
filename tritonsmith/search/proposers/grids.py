"""Where a launch's grid is written: the lambda at the launch, or the one a launcher's local
holds (`grid = lambda meta: ...`), and whether a rewrite may change that lambda in place."""

from __future__ import annotations

from tree_sitter import Node

from ...analysis.index import LaunchSite
from ...analysis.syntax import enclosing, text, walk

__all__ = ["grid_lambda"]


def grid_lambda(site: LaunchSite, kernel_name: str) -> tuple[Node | None, bool]:
    """(the grid's lambda, whether it is this kernel's own). A lambda written at the launch is
    its own; a local's lambda (its one assignment before the launch) is its own when every use
    of the name is a launch of this kernel, so rewriting it changes no other kernel's grid.
    (None, False) when the grid is not a lambda."""
    grid = site.grid
    if grid is None:
        return None, False
    if grid.type == "lambda":
        return grid, True
    function = enclosing(site.node, "function_definition")
    if grid.type != "identifier" or function is None:
        return None, False
    name = text(grid)
    assigned = [n.child_by_field_name("right") for n in walk(function) if n.type == "assignment"
                and text(n.child_by_field_name("left")) == name and n.start_byte < site.node.start_byte]
    if len(assigned) != 1 or assigned[0] is None or assigned[0].type != "lambda":
        return None, False
    uses = [n for n in walk(function) if n.type == "identifier" and text(n) == name
            and not (n.parent is not None and n.parent.type == "assignment" and n.parent.child_by_field_name("left") == n)]
    own = all(u.parent is not None and u.parent.type == "subscript" and u.parent.child_by_field_name("subscript") == u
              and text(u.parent.child_by_field_name("value")) == kernel_name for u in uses)
    return assigned[0], own
