"""`tritonsmith predict`: a file's predicted GPU time, per launch and in total, for the GPU
modelled for the target, the same on every run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.compiler
ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, cwd: Path) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "tritonsmith", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)
    return proc.returncode, proc.stdout, proc.stderr


def test_predict_names_the_gpu_and_is_the_same_on_every_run(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "relu.py").write_text((ROOT / "examples" / "kernelbench_relu.py").read_text())
    first = [run("predict", "relu.py", "--target", target, "--format", "json", cwd=tmp_path)
             for target in ("sm_86", "sm_90")]
    for code, out, err in first:
        assert code == 0, out + err
    a6000, h100 = (json.loads(out) for _, out, _ in first)
    assert (a6000["target"], a6000["gpu"], h100["gpu"]) == ("sm_86", "RTX A6000", "H100 SXM")
    assert a6000["launches"] and a6000["launches"][0]["kernel"] == "relu_kernel"
    assert a6000["device_seconds"] == pytest.approx(sum(launch["seconds"] for launch in a6000["launches"])
                                                    + a6000["torch_seconds"])
    assert a6000["seconds"] == max(a6000["device_seconds"], a6000["host_seconds"])
    assert 0 < a6000["elapsed_s"] < 120  # what the prediction took, for the cost bench
    # A memory-bound ReLU: the A6000's 768 GB/s against the H100's 3.35 TB/s.
    assert a6000["seconds"] > 3 * h100["seconds"]
    # Profiled at the sizes as written, without data (a hollow pass: PyTorch computes nothing).
    assert a6000["verified"] is None and a6000["summary"].endswith("at sizes as written")
    assert a6000["profiled"] == "without data"
    code, out, _ = run("predict", "relu.py", "--target", "sm_86", "--format", "json", cwd=tmp_path)
    assert code == 0 and json.loads(out)["seconds"] == a6000["seconds"]  # seeded sampling: no drift
    code, out, _ = run("predict", "relu.py", "--target", "sm_86", "--verify", cwd=tmp_path)
    assert code == 0 and "predicted RTX A6000 time" in out and "· verified" in out


def test_predict_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("x = 1\n")
    code, _, err = run("predict", "plain.py", cwd=tmp_path)
    assert code == 2 and "no spec" in err
    code, _, err = run("predict", "plain.py", "--target", "volta", cwd=tmp_path)
    assert code == 2 and "unknown target" in err


def test_an_autotuned_kernel_whose_first_config_cannot_launch_is_predicted_from_the_others(tmp_path: Path) -> None:
    """The first Config needs far more shared memory than an RTX A6000 has: the autotuner skips it
    there, and so does the prediction (every Config is profiled and compiled for the target)."""
    pytest.importorskip("triton")
    source = (ROOT / "examples" / "matmul.py").read_text().replace(
        '''    configs=[
''', '''    configs=[
        triton.Config({"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64}, num_warps=8, num_stages=4),
''', 1)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "matmul.py").write_text(source)
    code, out, err = run("predict", "matmul.py", "--target", "sm_86", "--format", "json", cwd=tmp_path)
    assert code == 0, out + err
    result = json.loads(out)
    assert result["seconds"] is not None and not result["cannot_launch"]
    [launch] = result["launches"]
    assert launch["configs"] == 4 and "BLOCK_M=256" not in launch["config"]


TUNES_ON_FIRST_CALL = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


batch_size = 64
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = None
        self.table = None

    def forward(self, x):
        out = torch.empty_like(x)
        if self.block is None:  # first call: time two candidates with CUDA events, prepare a table
            self.table = torch.randn(4096, 4096, device=x.device).t().contiguous()
            best = None
            for block in (256, 1024):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                scale_kernel[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), BLOCK=block)
                end.record()
                torch.cuda.synchronize()
                if best is None or start.elapsed_time(end) < best[0]:
                    best = (start.elapsed_time(end), block)
            self.block = best[1]
        scale_kernel[(triton.cdiv(x.numel(), self.block),)](x, out, x.numel(), BLOCK=self.block)
        return out
'''


def test_what_a_first_call_tunes_and_prepares_is_not_counted(tmp_path: Path) -> None:
    """A GPU benchmark times calls after a warm-up: the profile counts the second call, so a
    launcher that times its candidates with CUDA events and prepares a table on the first call is
    predicted by its one steady launch."""
    pytest.importorskip("triton")
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "tuned.py").write_text(TUNES_ON_FIRST_CALL)
    code, out, err = run("predict", "tuned.py", "--target", "sm_89", "--format", "json", cwd=tmp_path)
    assert code == 0, out + err
    result = json.loads(out)
    assert [launch["kernel"] for launch in result["launches"]] == ["scale_kernel"]
    assert not result["torch_seconds"], result["notes"]  # the 4096² table was the first call's
