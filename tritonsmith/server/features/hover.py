"""`textDocument/hover` on a diagnostic: the rule's statement, how to fix it, and its examples;
on a verified launcher or `ModelNew`: the last verification's details; on a name in a kernel:
its inferred type and shape in each launch configuration (rules/types_at.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ...rules.docs import rule_markdown
from ...rules.types_at import RecordedLaunches, name_types
from ..convert import to_lsp_range
from ..server import TritonsmithServer

if TYPE_CHECKING:
    from ...evaluator.verify import Verdict

__all__ = ["register"]


def register(server: TritonsmithServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: TritonsmithServer, params: types.HoverParams) -> types.Hover | None:
        state = ls.session.documents.get(params.text_document.uri)
        if state is None:
            return None
        point = state.document.lsp_to_point(params.position.line, params.position.character)
        index = ls.session.current_index(state)
        # One card per rule reported here (TS101 and TS102 can cover the same name). The
        # finding's own message is not repeated: editors show the diagnostic next to the hover.
        cards: dict[str, str] = {}
        first = None
        for finding in ls.session.findings_near(state, point, point):
            if finding.code not in cards:
                rule = ls.session.workspace.rules.get(finding.code)
                if rule is not None:
                    cards[finding.code] = f"### {rule.code} `{rule.name}`\n" + rule_markdown(rule).split("\n", 1)[1]
                    first = first or finding
        if cards and first is not None:
            return types.Hover(
                contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(cards.values())),
                range=to_lsp_range(state.document, first.span),
            )
        for verdict in state.verdicts:
            if point[0] == verdict.row:
                return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                                value=verdict_markdown(verdict)))
        if index is not None:
            # What the source leaves unknown, as the last check run launched it.
            recorded = None
            if state.verdicts:  # a verification has run: the evaluator is imported by now
                from ...evaluator.reports import recorded_launch_constexprs, recorded_launch_types

                recorded = RecordedLaunches(recorded_launch_types(state.verdicts),
                                            recorded_launch_constexprs(state.verdicts))
            try:
                typed = name_types(state.document.root, state.document.source, index, point,
                                   ls.session.workspace.version, recorded)
            except Exception:  # noqa: BLE001 - a hover never takes the server down
                typed = None
            if typed is not None:
                return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=typed.markdown()),
                                   range=to_lsp_range(state.document, typed.span))
        return None


def verdict_markdown(verdict: Verdict) -> str:
    """The details behind a verification's code lens."""
    lines = [f"### {verdict.name}: {'verified' if verdict.ok else 'FAILED'} ({verdict.mode})", ""]
    if not verdict.ok:
        lines += [f"**{verdict.stage}**: {verdict.message}", ""]
    lines.append(f"- {verdict.trials} trials at sizes: {verdict.sizes_text()}")
    if verdict.tail:
        lines.append("- extra sizes: " + ", ".join(f"{n}={v}" for n, (_, v) in verdict.tail.items()))
    timing = verdict.timing
    if timing is not None:
        env = timing.environment
        lines += [
            f"- vs reference: **{timing.interval_text()}** (per-round range {timing.speedup_low:.2f}–"
            f"{timing.speedup_high:.2f}×; ratio of trimmed means {timing.speedup:.2f}×)",
            f"- candidate {timing.candidate_mean:.4g} ms trimmed mean, {timing.candidate_median:.4g} ms median",
            f"- reference {timing.reference_mean:.4g} ms trimmed mean, {timing.reference_median:.4g} ms median",
            f"- {timing.runs} timed runs per side in {timing.rounds} alternating rounds, L2 flushed, sizes as written",
            f"- {env.get('gpu', '?')} ({env.get('capability', '?')}), torch {env.get('torch', '?')}, "
            f"Triton {env.get('triton', '?')}",
        ]
        if timing.flagged:
            lines.append("- **flagged**: above 10×; review before trusting it")
    elif verdict.mode == "interpreter":
        lines.append("- not timed: the interpreter's timings say nothing about a GPU")
    lines += [f"- note: {note}" for note in verdict.notes]
    return "\n".join(lines)
