"""The server's log: one line per save's job, no second timestamp in the editor's output
channel, and pygls' routine cancel warnings left out (issue 16, item 5)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tritonsmith.evaluator.reports import KernelReport, lens_title
from tritonsmith.server.jobs import job_summary

SCRIPT = """
import logging, sys
from tritonsmith.server import configure_logging
configure_logging(sys.argv[1] if len(sys.argv) > 1 else None)
logging.getLogger("pygls.protocol").warning("Cancel notification for unknown message id 42")
logging.getLogger("pygls.protocol").warning("a real pygls problem")
logging.getLogger("tritonsmith.server.jobs").info("k.py: 1 of 1 kernels compiled (0.4 s)")
"""


def test_stderr_lines_carry_no_timestamp_a_log_file_does_and_cancel_noise_is_dropped(tmp_path: Path):
    stderr = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True).stderr
    assert stderr.splitlines() == ["WARNING pygls.protocol: a real pygls problem",
                                   "INFO tritonsmith.server.jobs: k.py: 1 of 1 kernels compiled (0.4 s)"]
    log = tmp_path / "server.log"
    subprocess.run([sys.executable, "-c", SCRIPT, str(log)], capture_output=True, text=True, check=True)
    lines = log.read_text().splitlines()
    assert len(lines) == 2 and lines[0][:4].isdigit() and "Cancel notification" not in log.read_text()


def test_a_jobs_line_says_what_compiled_and_how_long_it_took():
    """The log and the lens agree (issue 34: the log said "4 of 4 compiled" while a lens said
    "not compiled"): a kernel whose every config waits for run-time constexprs is not compiled."""
    compiled = {"target": "sm_90", "config": "launch at line 9", "ok": True, "resources": {}}
    reports = [KernelReport(kernel="add_kernel", ok=True, results=[compiled]), KernelReport(kernel="mul_kernel", ok=False),
               KernelReport(kernel="lib_kernel", ok=True)]
    line = job_summary("k.py", reports, [], 3.14)
    assert line == ("k.py: 1 of 3 kernels compiled (mul_kernel failed) (lib_kernel not compiled: constexpr values "
                    "known only at run time) (3.1 s)")
    assert [lens_title(r).split(":")[0].split(" ·")[0] for r in reports] == ["compiled", "compile failed", "not compiled"]
    assert job_summary("empty.py", [], [], 0.2) == "empty.py: no kernel (0.2 s)"
