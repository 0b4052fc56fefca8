"""The evaluator: sandboxed worker processes that compile, run, verify and time kernels.

Invariant: only worker processes (`python -m tritonsmith.evaluator.worker`) import torch and
triton, and only they run user code. The modules the server imports (`protocol`, `sandbox`,
`pool`, and this package) import neither, so the editor starts fast and nothing a kernel does
(segfault, endless loop, memory bomb, `os._exit`, a flood of output) can take it down: the
pool kills and replaces the worker and reports the job's failure in one line.

Modules:
    protocol   `Job` and `Result`, the JSON messages between server and worker
    sandbox    allow-listed environment, secret scrubbing, scratch directories, memory probe
    jail       the namespaces that make a worker's sandbox a boundary (read-only system, no $HOME)
    pool       `WorkerPool`: spawns workers, enforces limits, replaces lost workers
    worker     the worker process: a registry of job handlers (`HANDLERS`)
    progress   worker side: the progress reports (one per forward pass) the hang watchdog needs
"""

from __future__ import annotations

from tritonsmith.evaluator.pool import WorkerPool
from tritonsmith.evaluator.protocol import FAILURES, Failure, Job, Result

__all__ = ["FAILURES", "Failure", "Job", "Result", "WorkerPool"]
