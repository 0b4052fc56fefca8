"""The worker-side checks of docs/verification.md, in-process and without a worker: the
namespace snapshot, PyTorch's profiler against the dispatch recorder, and the answer held
before a kernel produced it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tritonsmith.evaluator.accounting import profiled  # noqa: E402
from tritonsmith.evaluator.attribution import WorkRecorder  # noqa: E402
from tritonsmith.evaluator.correctness import answer_held  # noqa: E402
from tritonsmith.evaluator.integrity import Snapshot  # noqa: E402

TOL = {"float32": 1e-4}


def test_the_snapshot_sees_a_patch_by_any_route() -> None:
    snapshot = Snapshot()
    original = torch.allclose
    try:
        vars(torch)["allclose"] = lambda *args, **kwargs: True
        assert snapshot.changes() == ["torch.allclose replaced"]
    finally:
        vars(torch)["allclose"] = original
    detach = torch.Tensor.detach
    try:
        type.__setattr__(torch.Tensor, "detach", lambda self: self)
        assert "torch.Tensor.detach replaced" in snapshot.changes()
    finally:
        type.__setattr__(torch.Tensor, "detach", detach)
    assert snapshot.changes() == []


def test_the_profiler_finds_compute_the_recorder_did_not_see() -> None:
    from torch.utils._python_dispatch import _disable_current_modes

    x = torch.randn(8, 32)
    recorder = WorkRecorder([x])
    with recorder, profiled() as accounting:
        torch.softmax(x, dim=1)  # composite: the recorder sees _softmax, the profiler softmax over it
        (x @ x.t()).relu()
        with _disable_current_modes():
            torch.tanh(x)
    assert dict(accounting.unseen(recorder.seen)) == {"tanh": 1}


def test_an_answer_held_before_the_kernel_is_refused_by_value() -> None:
    answer = torch.softmax(torch.randn(8, 32), dim=1)
    meta = [{"kernel": "nudge", "launch": 0, "argument": 0, "source": "PyTorch mul"}]
    refused = answer_held([answer], [answer.clone()], meta, TOL)
    assert refused is not None and "argument 1 of nudge (launch 1) already held the output" in refused
    assert "computed by PyTorch mul" in refused
    # An affine image counts only where nothing recorded computed it.
    image = 0.5 - 2.0 * answer
    assert answer_held([answer], [image], meta, TOL) is None
    unseen = [{**meta[0], "source": "outside"}]
    assert "up to a scale and shift (correlation -1.00000)" in (answer_held([answer], [image], unseen, TOL) or "")
    # Something else of the same size: no finding.
    assert answer_held([answer], [torch.randn(8, 32)], unseen, TOL) is None


def test_a_kernels_result_moved_by_pytorch_is_still_the_kernels() -> None:
    """Values a launch wrote, reshaped, copied or cast by recorded data movement, are not held."""
    x = torch.randn(4, 8)
    recorder = WorkRecorder([x], hold=True)
    out = torch.empty(4, 8)
    with recorder:
        token = recorder.before_launch("k", [x, out])
        out.copy_(x * 2)  # what the kernel writes (the recorder is paused during a launch)
        recorder.after_launch(token)
        moved = out.reshape(8, 4).contiguous().to(torch.float64).to(torch.float32)
        token = recorder.before_launch("k2", [moved, torch.ones(2, 2)])
        recorder.after_launch(token)
    # Held: the fresh buffer k writes into and the ones k2 reads; not k's result moved to k2.
    assert [(h.kernel, h.argument) for h in recorder.held] == [("k", 1), ("k2", 1)]
