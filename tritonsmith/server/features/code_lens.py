"""`textDocument/codeLens` above each kernel: its last compile's resources, or "Compile now";
and the server command `tritonsmith.server.verify` behind it (compile the document now).

Titles are short (one line of a laptop's editor); the details are the lens's tooltip. A kernel
edited since its last compile keeps its lens, marked "edited since", until it is compiled again
(no blank lens while a pause in typing has not come yet)."""

from __future__ import annotations

from lsprotocol import types

from ..compile_findings import compiled_on
from ..server import TritonsmithServer

__all__ = ["VERIFY_COMMAND", "register"]

VERIFY_COMMAND = "tritonsmith.server.verify"


def register(server: TritonsmithServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: TritonsmithServer, params: types.CodeLensParams) -> list[types.CodeLens] | None:
        state = ls.session.documents.get(params.text_document.uri)
        if state is None:
            return None
        ls.session.current_index(state)  # kernels and types only: no need to wait for the rules
        if state.index is None or not ls.jobs.available():
            return []
        reports = {r.kernel: r for r in state.compile_reports} | state.typing_failures
        compiled = state.full_texts or state.compiled_texts  # what each kernel's last compile read
        lenses = []
        for kernel in state.index.kernels:
            row = kernel.outer.start_point[0]  # above the decorators: the whole kernel
            where = types.Range(types.Position(row, 0), types.Position(row, 0))
            report = reports.get(kernel.name)
            if report is None:
                title, tooltip = "Compile now", "compile this file's kernels for the targets now"
            else:  # a compile has reported: the evaluator is imported by now
                from ...evaluator import reports as shown

                stale = kernel.name in compiled and compiled_on(state.document.source, kernel) != compiled[kernel.name]
                predicted = shown.predicted_for(state.verdicts, kernel.name)
                as_written = shown.as_written_for(state.verdicts, kernel.name)
                title = shown.lens_title(report, predicted, as_written, stale=stale)
                tooltip = shown.lens_details(report, predicted, as_written, stale=stale)
            lenses.append(types.CodeLens(range=where, command=types.Command(
                title=title, command=VERIFY_COMMAND, arguments=[state.uri], tooltip=tooltip)))
        for verdict in state.verdicts:
            row = verdict.row
            lenses.append(types.CodeLens(
                range=types.Range(types.Position(row, 0), types.Position(row, 0)),
                command=types.Command(title=verdict.short_summary(), command=VERIFY_COMMAND, arguments=[state.uri],
                                      tooltip=verdict.summary())))
        return lenses

    @server.command(VERIFY_COMMAND)
    def verify(ls: TritonsmithServer, uri: str) -> None:
        ls.jobs.on_save(uri, now=True)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: TritonsmithServer, params: None) -> None:
        ls.jobs.close()
        ls.searches.cancel_all()
        if ls.watcher is not None:
            ls.watcher.stop()
