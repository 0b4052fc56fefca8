"""A benchmark run's outputs: `results.json`, `report.md`, PNG plots (speedup distribution,
best speedup against steps) and `report.html`, one self-contained page (plots inlined) that
opens in any browser. Plots need matplotlib (in the `[eval]` extra); without it they are
skipped and the report says so.
"""

from __future__ import annotations

import base64
import html
import json
from dataclasses import asdict
from pathlib import Path

from .runner import SuiteResult

__all__ = ["write_report"]


def _json(suite: SuiteResult) -> dict[str, object]:
    return {
        "folder": suite.folder, "device": suite.device, "speedups": suite.unit, "steps": suite.steps,
        "proposer": suite.proposer, "protocol": asdict(suite.protocol), "environment": suite.environment,
        "seconds": suite.seconds, "metrics": suite.metrics.as_dict(),
        "problems": [asdict(p) for p in suite.problems],
    }


def _markdown(suite: SuiteResult) -> str:
    m = suite.metrics
    ran = [p for p in suite.problems if not p.error]
    started = sum(1 for p in ran if p.start_ok)
    lines = [
        f"# tritonsmith bench: {Path(suite.folder).name}", "",
        f"{len(suite.problems)} problems, {suite.steps} steps each, proposer {suite.proposer}, "
        f"{'GPU' if suite.device == 'gpu' else 'CPU'}; speedups {suite.unit}.",
        f"Protocol `{suite.protocol.name}`: {suite.protocol.description}."
        + ("" if suite.device == "gpu" else " Without a GPU only its correctness part applies; screening is "
           "interpreter time (2 rounds × 3 calls per side), for the search's relative comparisons."),
        "A task is correct only when the search found a new verified candidate (the unmodified start does not "
        "count); a speedup above the start counts only when confirmed (the candidate and the start re-timed in "
        "alternating rounds in fresh workers, the 95% interval's lower bound above 1 + the noise floor); an "
        "unconfirmed candidate counts as no faster than the start.",
        "" if not suite.environment else "Environment: " + ", ".join(f"{k} {v}" for k, v in suite.environment.items()),
        "",
        "| accuracy (new verified candidate) | start verified | confirmed faster | mean speedup (10× cap, incorrect = 0) "
        "| Fast@1.2 | Fast@2 | GM(10) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {m.accuracy:.0%} | {started}/{len(ran)} | {sum(1 for p in ran if p.claimed)}/{len(ran)} | "
        f"{m.mean_speedup:.2f}× | {m.fast_1_2:.0%} | {m.fast_2:.0%} | {m.gm10:.2f}× |",
        "",
        "| problem | kernel | start verified | new verified | set aside | result (confirmation) | task speedup "
        "| candidates | seconds | note |",
        "|---|---|---|---:|---:|---|---:|---:|---:|---|",
    ]
    for p in suite.problems:
        speed = f"{p.speedup:.2f}×" if p.speedup is not None else "—"
        start = ("yes" + (f" ({p.start_speedup:.2f}×)" if suite.device == "gpu" and p.start_speedup is not None else "")
                 if p.start_ok else "no")
        lines.append(f"| {p.name} | `{p.kernel}` | {start} | {p.new_verified} | {p.set_aside} | {p.result or '—'} | "
                     f"{speed} | {p.candidates} | {p.seconds} | {p.error} |")
    return "\n".join(lines) + "\n"


def _plots(suite: SuiteResult, out: Path) -> list[Path]:
    try:
        import matplotlib
    except ImportError:
        return []
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    unit = "GPU, vs PyTorch" if suite.device == "gpu" else (
        "predicted H100 SXM, vs start" if suite.objective == "predicted" else "interpreter, vs start")
    paths = []
    speedups = [p.speedup for p in suite.problems if p.speedup is not None]
    figure, axis = plt.subplots(figsize=(6, 3.5))
    axis.hist([min(s, 10.0) for s in speedups] or [0.0], bins=20, color="#4878d0")
    axis.set_xlabel(f"task speedup ({unit}; confirmed, capped at 10×)")
    axis.set_ylabel("problems")
    axis.set_title("speedup distribution")
    figure.tight_layout()
    paths.append(out / "speedup-distribution.png")
    figure.savefig(paths[-1], dpi=110)
    plt.close(figure)
    figure, axis = plt.subplots(figsize=(6, 3.5))
    for p in suite.problems:
        if p.steps:
            axis.plot(range(1, len(p.steps) + 1), p.steps, alpha=0.35, linewidth=1)
    curves = [p.steps for p in suite.problems if p.steps]
    if curves:
        length = max(len(c) for c in curves)
        mean = [sum(min(c[min(i, len(c) - 1)], 10.0) for c in curves) / len(curves) for i in range(length)]
        axis.plot(range(1, length + 1), mean, color="black", linewidth=2.5, label="mean (capped at 10×)")
        axis.legend()
    axis.set_xlabel("steps")
    axis.set_ylabel(f"best new candidate, screening ({unit})")
    axis.set_title("best speedup against steps (screening, unconfirmed)")
    axis.grid(alpha=0.3)
    figure.tight_layout()
    paths.append(out / "speedup-vs-steps.png")
    figure.savefig(paths[-1], dpi=110)
    plt.close(figure)
    return paths


def _html(markdown: str, plots: list[Path]) -> str:
    body = []
    in_table = False
    for line in markdown.splitlines():
        if line.startswith("|"):
            cells = [html.escape(c.strip()) for c in line.strip("|").split("|")]
            if set("".join(cells)) <= set("-:"):
                continue
            tag = "th" if not in_table else "td"
            if not in_table:
                body.append("<table>")
                in_table = True
            body.append("<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in cells) + "</tr>")
            continue
        if in_table:
            body.append("</table>")
            in_table = False
        if line.startswith("# "):
            body.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line:
            body.append(f"<p>{html.escape(line)}</p>")
    if in_table:
        body.append("</table>")
    for plot in plots:
        data = base64.b64encode(plot.read_bytes()).decode()
        body.append(f'<img alt="{html.escape(plot.stem)}" src="data:image/png;base64,{data}">')
    if not plots:
        body.append("<p>Plots need matplotlib (pip install \"tritonsmith[eval]\").</p>")
    style = ("body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;color:#222}"
             "table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.3rem .6rem}"
             "th{background:#f3f3f3}img{max-width:100%;display:block;margin:1rem 0}")
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>tritonsmith bench</title>"
            f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")


def write_report(suite: SuiteResult, out: Path) -> dict[str, Path]:
    """Write every output file into `out`; returns them by kind."""
    out.mkdir(parents=True, exist_ok=True)
    files = {"json": out / "results.json", "markdown": out / "report.md", "html": out / "report.html"}
    files["json"].write_text(json.dumps(_json(suite), indent=2), encoding="utf-8")
    markdown = _markdown(suite)
    files["markdown"].write_text(markdown, encoding="utf-8")
    plots = _plots(suite, out)
    for plot in plots:
        files[plot.stem] = plot
    files["html"].write_text(_html(markdown, plots), encoding="utf-8")
    return files
