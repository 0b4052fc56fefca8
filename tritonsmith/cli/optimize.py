"""`tritonsmith optimize FILE --kernel NAME`: search for a faster verified variant of one kernel
(search/) and write the best as a patch."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..settings import Settings
from .common import file_settings


def register(commands: Any) -> None:
    optimize = commands.add_parser("optimize", help="search for a faster verified variant of a kernel")
    optimize.add_argument("file", metavar="FILE")
    optimize.add_argument("--kernel", required=True, metavar="NAME", help="the @triton.jit kernel to optimise")
    optimize.add_argument("--steps", type=int, default=100, help="candidates to evaluate (default 100)")
    optimize.add_argument("--patience", type=int, metavar="N",
                          help=f"stop once N candidates in a row find nothing faster than the best so far "
                               f"(default: patience in [tool.tritonsmith], else {Settings.patience}; 0: run every step)")
    optimize.add_argument("--time-limit", type=float, metavar="SECONDS",
                          help="stop searching after this long (the confirmation of the best comes after)")
    optimize.add_argument("--proposer", choices=("auto", "offline", "anthropic", "openai"), default="auto",
                          help="who writes candidates (auto: a model when a key is set and --allow-upload is given, "
                          "else offline)")
    optimize.add_argument("--allow-upload", action="store_true",
                          help="consent to sending the kernel to the model's provider")
    optimize.add_argument("--model", help="the model (anthropic, or the OpenAI-compatible server's)")
    optimize.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    optimize.add_argument("--spending-cap", type=float, default=10.0, metavar="USD", help="stop spending above this")
    optimize.add_argument("--device", choices=("auto", "gpu", "cpu"), default="auto")
    optimize.add_argument("--target", default="sm_90", help="the GPU target candidates compile for")
    optimize.add_argument("--objective", choices=("auto", "predicted", "interpreter"), default="auto",
                          help="without a GPU, what candidates are ranked by: their predicted time on --target "
                          "(auto, predicted) or interpreter time; with a GPU, always GPU time")
    optimize.add_argument("--concurrency", type=int, default=1, help="candidates evaluated at once")
    optimize.add_argument("--seed", type=int, default=0)
    optimize.add_argument("--resume", metavar="ID", help="continue a search from its journal")
    optimize.add_argument("--ray", metavar="ADDRESS", help="evaluate on a Ray cluster, one actor per GPU "
                          "(e.g. auto or ray://head:10001; needs tritonsmith[ray])")
    optimize.add_argument("--out", metavar="PATCH", help="where to write the patch (default .tritonsmith/<id>.patch)")
    optimize.add_argument("--format", choices=("text", "json"), default="text",
                          help="json: the result, its confirmation interval and the patch's path on stdout")
    optimize.set_defaults(handler=cmd_optimize)


def cmd_optimize(args: argparse.Namespace) -> int:
    """Search for a faster verified variant of one kernel; write the best as a patch."""
    import signal
    import threading

    from rich.console import Console
    from rich.table import Table

    from ..evaluator.predict import predicted_label
    from ..evaluator.verify import mode_for_device
    from ..search.engine import Progress
    from ..search.setup import SearchRequest, SetupError, open_search

    mode = mode_for_device(args.device)
    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"{args.file}: no such file")
    settings, root = file_settings(args, path)
    patience = args.patience if args.patience is not None else settings.patience
    request = SearchRequest(
        path=path, kernel=args.kernel, device=mode, proposer=args.proposer, steps=args.steps, patience=patience,
        wall_time_s=args.time_limit, concurrency=args.concurrency, seed=args.seed, allow_upload=args.allow_upload,
        model=args.model, base_url=args.base_url, spending_cap_usd=args.spending_cap, target=args.target,
        ray_address=args.ray, objective=args.objective, import_paths=tuple(settings.import_folders(root)),
    )
    console = Console(stderr=True, highlight=False)
    cancel = threading.Event()

    def stop(signum: int, frame: object) -> None:
        """Ctrl-C or SIGTERM: stop cleanly (the journal keeps the search, resumable); again: at once."""
        if cancel.is_set():
            raise KeyboardInterrupt
        cancel.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    predicted = mode != "gpu" and args.objective != "interpreter" and not args.ray
    unit = "GPU time" if mode == "gpu" else (
        predicted_label(args.target) if predicted else "interpreter time (not a GPU figure)")
    try:
        status = console.status("starting: evaluating the original kernel")
        with status:
            def progress(update: Progress) -> None:
                status.update(update.message(mode))
                console.print(f"  {update.last}")

            try:
                opened = open_search(request, resume=args.resume, progress=progress, cancel=cancel)
            except SetupError as error:
                raise UsageError(error.user_message) from None
            with opened:
                console.print(f"search {opened.search.search_id}: {args.kernel} in {path}, {request.steps} steps, "
                              f"proposer {opened.search.proposer.name}, {unit}")
                result = opened.search.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    leaders = result.leaders()
    table = Table(title=f"fastest verified candidates in screening ({unit}; unconfirmed, a few calls each)")
    columns = ("node", "step", "screening", "spread") + (("predicted µs",) if predicted else ()) + (
        ("interpreter ms" if mode != "gpu" else "ms"), "proposer")
    for column in columns:
        table.add_column(column)
    for node in leaders:
        ev = node.evaluation
        assert ev is not None
        spread = f"{ev.spread[0]:.2f}–{ev.spread[1]:.2f}" if ev.spread else ""
        tied = len(result.tied.get(node.id, ()))
        cells = [str(node.id) + (f" (+{tied} tied)" if tied else ""), node.kind.value, f"{ev.speedup:.2f}×", spread]
        if predicted:
            cells.append(f"{ev.predicted_s * 1e6:.4g}" if ev.predicted_s is not None else "")
        cells += [f"{ev.time_ms:.4g}" if ev.time_ms is not None else "", node.proposer or "original"]
        table.add_row(*cells)
    if args.format == "text":
        console.print(table)
    aside = result.set_aside
    why = (f"plateau ({patience} candidates in a row found nothing faster)" if result.stopped == "plateau"
           else result.stopped)
    console.print(f"stopped: {why}; {max(0, result.tree.evaluated_count - 1)} candidates"
                  + (f" ({aside} set aside: the same kernel as an evaluated one once hints that cannot change "
                     "the measured time are ignored; not re-timed)" if aside else "")
                  + (f"; ${result.cost_usd:.2f} spent" if result.cost_usd else "")
                  + f"; resume with --resume {result.search_id}" * (result.stopped in ("cancelled", "time")))
    for node_id, confirmation in result.confirmations:
        console.print(f"confirmation of #{node_id} against the original: {confirmation.text()}; {confirmation.how()}")
    out: Path | None = None
    if result.improved:
        from ..settings import find_workspace_root

        out = Path(args.out) if args.out else find_workspace_root(path.resolve()) / ".tritonsmith" / f"{result.search_id}.patch"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(result.diff, encoding="utf-8")
    if args.format == "json":
        best = result.best
        print(json.dumps({
            "searchId": result.search_id, "stopped": result.stopped, "improved": result.improved,
            "measuredOn": mode, "measured": result.task.measured, "result": result.outcome_text(),
            "speedup": result.speedup,
            "confirmation": result.confirmation.to_json() if result.confirmation is not None else None,
            "confirmations": [{"node": n, **c.to_json()} for n, c in result.confirmations],
            "best": best.id if best is not None else None, "candidates": result.tree.evaluated_count - 1,
            "setAside": aside, "patch": str(out) if out is not None else None, "costUsd": result.cost_usd,
            "tied": result.tied.get(best.id, []) if best is not None else [],
            "screening": [{"node": n.id, "kind": n.kind.value, "speedup": n.evaluation.speedup if n.evaluation else None,
                           "timeMs": n.evaluation.time_ms if n.evaluation else None,
                           "predictedS": n.evaluation.predicted_s if n.evaluation else None} for n in leaders],
        }, indent=2))
    if not result.improved or out is None:
        console.print(f"{result.outcome_text()} ({unit}): no patch written")
        return 130 if cancel.is_set() else 1  # 130: interrupted, as a shell reports Ctrl-C
    assert result.best is not None
    others = result.tied.get(result.best.id, [])
    ties = (f" ({len(others)} other candidates tie with it in screening; it changes the fewest lines)" if others else "")
    console.print(f"best: #{result.best.id}, {result.outcome_text()} faster ({unit}){ties}; patch written to {out} "
                  f"(git apply {out})")
    return 0
