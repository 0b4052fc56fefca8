"""The interpreter's bounds check (evaluator/bounds.py): every load, store and atomic outside
the tensors a launch may touch raises before touching memory, and nothing a correct kernel does
is refused: masked tails, views reaching their storage, addresses passed as integers or kept in
a tensor of pointers, tensor descriptors.

Each case runs in its own process under TRITON_INTERPRET=1 (the check patches Triton's
interpreter for the whole process, as in a worker) and prints what it saw.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.compiler]

_PRELUDE = '''
import json, sys
import torch
import triton
import triton.language as tl
from tritonsmith.evaluator.bounds import OutOfBounds, check_bounds

check_bounds()


def outcome(run):
    try:
        value = run()
    except Exception as exc:
        cause = exc.__cause__ if isinstance(exc.__cause__, OutOfBounds) else exc
        print(json.dumps({"error": type(cause).__name__, "message": str(cause)}))
    else:
        print(json.dumps({"value": value}))
'''


def _run(tmp_path: Path, body: str, then: str = "outcome(run)") -> dict[str, object]:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    script = tmp_path / "case.py"
    script.write_text(_PRELUDE + textwrap.dedent(body) + "\n" + then + "\n")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


_COPY = '''
@triton.jit
def copy(x_ptr, out_ptr, n, START: tl.constexpr, BLOCK: tl.constexpr, MASKED: tl.constexpr):
    offsets = START + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = (offsets >= 0) & (offsets < n) if MASKED else offsets < BLOCK * 1000
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def launch(n, start=0, block=64, masked=True):
    x = torch.arange(n, dtype=torch.float32)
    out = torch.zeros(n)
    copy[(triton.cdiv(n, block),)](x, out, n, START=start, BLOCK=block, MASKED=masked)
    return bool(torch.equal(out[max(start, 0):], x[max(start, 0):]))
'''


def test_a_masked_tail_passes_and_an_unmasked_one_is_stopped_at_the_load(tmp_path: Path) -> None:
    assert _run(tmp_path, _COPY, "outcome(lambda: launch(1000))") == {"value": True}
    result = _run(tmp_path, _COPY, "outcome(lambda: launch(1000, masked=False))")
    assert result["error"] == "OutOfBounds", result
    # How many of the 24 lanes past the end land outside every tensor depends on the heap's
    # layout (past a small padding a neighbour's storage may begin): at least the first.
    assert re.fullmatch(
        r"load out of bounds in program \(15, 0, 0\): (\d+) of its 64 lanes \(4-byte elements\) outside every "
        r"tensor the kernel was given; the first at byte 4000 of x_ptr's 4000-byte storage \(element 1000\); "
        r"check the mask", str(result["message"])), result


def test_a_negative_offset_is_out_of_bounds_before_the_start(tmp_path: Path) -> None:
    result = _run(tmp_path, _COPY, "outcome(lambda: launch(1000, start=-8, masked=False))")
    assert result["error"] == "OutOfBounds", result
    assert re.search(r"program \(0, 0, 0\): \d of its 64 lanes", str(result["message"])), result
    assert "the first at byte -32 of x_ptr's 4000-byte storage" in str(result["message"])


def test_a_store_past_the_end_is_stopped_even_when_the_load_is_masked(tmp_path: Path) -> None:
    result = _run(tmp_path, '''
        @triton.jit
        def fill(out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offsets, tl.zeros([BLOCK], dtype=tl.int16) + 7)

        def run():
            out = torch.empty(100, dtype=torch.int16)
            fill[(2,)](out, 100, BLOCK=64)
    ''')
    assert result["error"] == "OutOfBounds", result
    assert str(result["message"]).startswith("store out of bounds in program (1, 0, 0): 28 of its 64 lanes (2-byte")


def test_an_atomic_past_the_end_is_stopped(tmp_path: Path) -> None:
    result = _run(tmp_path, '''
        @triton.jit
        def count(out_ptr, BLOCK: tl.constexpr):
            tl.atomic_add(out_ptr + tl.arange(0, BLOCK), 1)

        def run():
            out = torch.zeros(10, dtype=torch.int32)
            count[(1,)](out, BLOCK=16)
    ''')
    assert result["error"] == "OutOfBounds", result
    assert str(result["message"]).startswith("atomic out of bounds in program (0, 0, 0): 6 of its 16 lanes")


def test_a_view_may_read_all_of_its_storage_but_not_past_it(tmp_path: Path) -> None:
    body = '''
        @triton.jit
        def window(x_ptr, out_ptr, BEFORE: tl.constexpr, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK) - BEFORE
            tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offsets))

        def run(before, block):
            base = torch.arange(40, dtype=torch.float32)
            view = base[10:20]  # its storage is all 40 elements
            out = torch.empty(block)
            window[(1,)](view, out, BEFORE=before, BLOCK=block)
            return out.tolist() == list(range(10 - before, 10 - before + block))
    '''
    assert _run(tmp_path, body, "outcome(lambda: run(8, 32))") == {"value": True}
    result = _run(tmp_path, body, "outcome(lambda: run(16, 32))")
    assert result["error"] == "OutOfBounds", result
    assert "6 of its 32 lanes" in str(result["message"]) and "byte -24 of x_ptr's 160-byte storage" in str(result["message"])


def test_addresses_passed_as_integers_or_kept_in_a_tensor_of_pointers_are_followed(tmp_path: Path) -> None:
    """A grouped GEMM passes a tensor of its operands' addresses; a launcher may pass
    `x.data_ptr()` itself. The operands are live tensors, so their loads are allowed; an address
    of a tensor freed since is not."""
    body = '''
        @triton.jit
        def gather(table_ptr, address, out_ptr, BLOCK: tl.constexpr):
            group = tl.program_id(0)
            base = tl.load(table_ptr + group).to(tl.pointer_type(tl.float32))
            offsets = tl.arange(0, BLOCK)
            direct = address.to(tl.pointer_type(tl.float32))
            tl.store(out_ptr + group * BLOCK + offsets, tl.load(base + offsets) + tl.load(direct + offsets))

        def run(free_first):
            operands = [torch.full((16,), float(i)) for i in range(3)]
            extra = torch.ones(16)
            table = torch.tensor([t.data_ptr() for t in operands], dtype=torch.int64)
            address = extra.data_ptr()
            if free_first:
                del extra
                torch.empty(1 << 24).fill_(0)  # the freed block is gone from the live tensors
            out = torch.empty(48)
            gather[(3,)](table, address, out, BLOCK=16)
            return out.tolist() == [1.0] * 16 + [2.0] * 16 + [3.0] * 16
    '''
    assert _run(tmp_path, body, "outcome(lambda: run(False))") == {"value": True}
    result = _run(tmp_path, body, "outcome(lambda: run(True))")
    assert result["error"] == "OutOfBounds" and "16 of its 16 lanes" in str(result["message"]), result


def test_the_process_is_scanned_for_tensors_once_while_the_ones_found_are_alive(tmp_path: Path) -> None:
    """A scan of every object costs tens of milliseconds: a launch through a table of addresses
    looks among the tensors the last scan found first, and scans again only when it misses."""
    result = _run(tmp_path, '''
        import tritonsmith.evaluator.bounds as bounds

        scans = []
        scan = bounds._scan
        bounds._scan = lambda: (scans.append(1), scan())[1]

        @triton.jit
        def first(table_ptr, out_ptr, BLOCK: tl.constexpr):
            base = tl.load(table_ptr).to(tl.pointer_type(tl.float32))
            tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(base + tl.arange(0, BLOCK)))

        def launch(operand):
            table = torch.tensor([operand.data_ptr()], dtype=torch.int64)
            out = torch.empty(8)
            first[(1,)](table, out, BLOCK=8)
            return out.tolist() == operand.tolist()

        def run():
            kept = torch.arange(8, dtype=torch.float32)
            same = [launch(kept) for _ in range(3)]
            scanned = len(scans)
            fresh = launch(torch.arange(8, 16, dtype=torch.float32))
            return [all(same), scanned, fresh, len(scans)]
    ''')
    assert result == {"value": [True, 1, True, 2]}, result


def test_a_tensor_descriptor_pads_its_edge_instead_of_reading_past_it(tmp_path: Path) -> None:
    result = _run(tmp_path, '''
        @triton.jit
        def tile(x_ptr, out_ptr, M, N, BLOCK: tl.constexpr):
            desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK, BLOCK])
            block = desc.load([tl.program_id(0) * BLOCK, 0])
            rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)[:, None]
            cols = tl.arange(0, BLOCK)[None, :]
            tl.store(out_ptr + rows * BLOCK + cols, block)

        def run():
            x = torch.arange(20 * 12, dtype=torch.float32).reshape(20, 12)
            out = torch.empty(32, 16)
            tile[(2,)](x, out, 20, 12, BLOCK=16)
            expected = torch.zeros(32, 16)
            expected[:20, :12] = x
            return bool(torch.equal(out, expected))
    ''')
    assert result == {"value": True}
