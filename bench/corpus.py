"""Generate realistic Triton kernel files of a requested length, for the benchmarks.

Each file is a module of kernel "groups"; a group holds, with names suffixed by an index so
every kernel is distinct:

* a vector-add kernel and its host launcher (grid lambda over ``meta["BLOCK_SIZE"]``),
* a persistent row softmax (``tl.range`` with ``num_stages``) and its launcher,
* a layer-norm forward kernel (three passes over the row) and its launcher,
* a ``@triton.jit`` leaky-ReLU helper and a grouped matmul with ``@triton.autotune`` configs,
  ``@triton.heuristics`` (``EVEN_K``) and a launcher with a grid lambda over ``META``.

A few groups carry real rule violations so the diagnostics are not empty:

* every 3rd group: the vector add's ``BLOCK_SIZE`` lacks ``tl.constexpr`` although it feeds
  ``tl.arange`` (TS102 block-size-not-constexpr),
* every 5th group: the softmax asks for ``tl.program_id(3)`` (TS404 program-id-axis).

Usage::

    python bench/corpus.py --lines 2000 -o /tmp/k.py        # one file
    python bench/corpus.py --lines 2500 --files 40 -o DIR     # a directory of files

``generate(lines, seed)`` returns exactly ``lines`` lines (padded with comment lines at the end),
and ``editable_sites(text)`` lists (line, column) positions inside kernel bodies where a
one-character edit renames an assignment target, for the latency benchmark.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

__all__ = ["editable_sites", "generate", "write_corpus"]

HEADER = '''"""Generated Triton kernels for tritonsmith benchmarks (module {seed})."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda"
NUM_SM = 132  # H100 SXM; host code only

'''

VECTOR_ADD = '''
@triton.jit
def add_kernel_{i}(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE{block_ann}):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y * {scale}
    tl.store(out_ptr + offsets, output, mask=mask)


def add_{i}(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    output = torch.empty_like(x)
    assert x.device == y.device == output.device
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    add_kernel_{i}[grid](x, y, output, n_elements, BLOCK_SIZE={block})
    return output

'''

SOFTMAX = '''
@triton.jit
def softmax_kernel_{i}(
    output_ptr,
    input_ptr,
    input_row_stride,
    output_row_stride,
    n_rows,
    n_cols,
    BLOCK_SIZE: tl.constexpr,
    num_stages: tl.constexpr,
):
    row_start = tl.program_id({axis})
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


def softmax_{i}(x: torch.Tensor) -> torch.Tensor:
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps = 8
    if BLOCK_SIZE >= 2048:
        num_warps = 16
    num_stages = 4 if BLOCK_SIZE <= 1024 else 2
    y = torch.empty_like(x)
    num_programs = min(NUM_SM * {occupancy}, n_rows)
    softmax_kernel_{i}[(num_programs, 1, 1)](
        y,
        x,
        x.stride(0),
        y.stride(0),
        n_rows,
        n_cols,
        BLOCK_SIZE=BLOCK_SIZE,
        num_stages=num_stages,
        num_warps=num_warps,
    )
    return y

'''

LAYER_NORM = '''
@triton.jit
def layer_norm_fwd_{i}(
    X,  # pointer to the input
    Y,  # pointer to the output
    W,  # pointer to the weights
    B,  # pointer to the biases
    Mean,  # pointer to the mean
    Rstd,  # pointer to the 1/std
    stride,  # how much to increase the pointer when moving by 1 row
    N,  # number of columns in X
    eps,  # epsilon to avoid division by zero
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


def layer_norm_{i}(x, normalized_shape, weight, bias, eps=1e-5):
    y = torch.empty_like(x)
    x_arg = x.reshape(-1, x.shape[-1])
    M, N = x_arg.shape
    mean = torch.empty((M,), dtype=torch.float32, device=x.device)
    rstd = torch.empty((M,), dtype=torch.float32, device=x.device)
    MAX_FUSED_SIZE = 65536 // x.element_size()
    BLOCK_SIZE = min(MAX_FUSED_SIZE, triton.next_power_of_2(N))
    if N > BLOCK_SIZE:
        raise RuntimeError("This layer norm doesn't support feature dim >= 64KB.")
    num_warps = min(max(BLOCK_SIZE // 256, 1), {max_warps})
    layer_norm_fwd_{i}[(M,)](
        x_arg, y, weight, bias, mean, rstd, x_arg.stride(0), N, eps,
        BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps, num_ctas=1,
    )
    return y, mean, rstd

'''

MATMUL = '''
@triton.jit
def leaky_relu_{i}(x):
    return tl.where(x >= 0, x, {slope} * x)


@triton.autotune(
    configs=[
        triton.Config({{"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}}, num_stages=3, num_warps=8),
        triton.Config({{"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}}, num_stages=4, num_warps=4),
        triton.Config({{"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}}, num_stages=4, num_warps=4),
        triton.Config({{"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}}, num_stages=4, num_warps=4),
        triton.Config({{"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}}, num_stages=4, num_warps=4),
        triton.Config({{"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}}, num_stages=5, num_warps=2),
    ],
    key=["M", "N", "K"],
)
@triton.heuristics({{"EVEN_K": lambda args: args["K"] % args["BLOCK_SIZE_K"] == 0}})
@triton.jit
def matmul_kernel_{i}(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
    EVEN_K: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu_{i}(accumulator)
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def matmul_{i}(a: torch.Tensor, b: torch.Tensor, activation: str = "") -> torch.Tensor:
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    assert a.is_contiguous(), "Matrix A must be contiguous"
    M, K = a.shape
    K, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)
    matmul_kernel_{i}[grid](
        a, b, c,
        M, N, K,
        a.stride(0), a.stride(1),
        b.stride(0), b.stride(1),
        c.stride(0), c.stride(1),
        ACTIVATION=activation,
    )
    return c

'''


def _pieces(group: int) -> list[str]:
    """The four kernel pieces of group `group`, with its variations and violations."""
    i = group
    return [
        VECTOR_ADD.format(
            i=i,
            block_ann="" if i % 3 == 2 else ": tl.constexpr",  # TS102 every 3rd group
            block=(256, 512, 1024, 2048)[i % 4],
            scale=f"{1 + i % 7}.0",
        ),
        SOFTMAX.format(i=i, axis=3 if i % 5 == 4 else 0, occupancy=1 + i % 4),  # TS404 every 5th
        LAYER_NORM.format(i=i, max_warps=(4, 8, 16)[i % 3]),
        MATMUL.format(i=i, slope=f"0.0{1 + i % 9}"),
    ]


def generate(lines: int, seed: int = 0) -> str:
    """A module of exactly `lines` lines (at least the header's) of distinct Triton kernels."""
    out = HEADER.format(seed=seed)
    count = out.count("\n")
    group = seed * 10_000
    done = False
    while not done:
        for piece in _pieces(group):
            n = piece.count("\n")
            if count + n > lines:
                done = True
                break
            out += piece
            count += n
        group += 1
    while count < lines:
        out += f"# padding line {count + 1}\n"
        count += 1
    return out


_ASSIGN = re.compile(r"^(\s+)([a-z_][a-z0-9_]*)\s*(=|\+=)\s")
_DEF = re.compile(r"^(\s*)def\s")


def editable_sites(text: str, where: str = "kernel") -> list[tuple[int, int]]:
    """(line, column) positions just after the first character of an assignment target in the
    body of a ``@triton.jit`` function (`where="host"`: of any other function, the launchers):
    inserting a letter there renames the variable and keeps the file syntactically valid."""
    sites: list[tuple[int, int]] = []
    lines = text.split("\n")
    in_jit = in_def = False
    pending_jit = False
    def_indent = -1
    for number, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("@triton.jit"):
            pending_jit = True
            continue
        match = _DEF.match(line)
        if match:
            in_jit = pending_jit
            in_def = True
            pending_jit = False
            def_indent = len(match.group(1))
            continue
        if stripped and not line.startswith(" ") and not stripped.startswith(("@", ")", "#")):
            in_jit = in_def = False
        if stripped.startswith("@"):
            in_jit = in_def = False
            continue
        if not (in_jit if where == "kernel" else in_def and not in_jit):
            continue
        match = _ASSIGN.match(line)
        if match and len(match.group(1)) > def_indent:
            sites.append((number, len(match.group(1)) + 1))
    return sites


def write_corpus(folder: Path, files: int, lines: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(files):
        path = folder / f"kernels_{n:03d}.py"
        path.write_text(generate(lines, seed=n))
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--files", type=int, default=0, help="write a directory of this many files")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    if args.files:
        paths = write_corpus(Path(args.output), args.files, args.lines)
        print(f"wrote {len(paths)} files of {args.lines} lines to {args.output}")
    else:
        Path(args.output).write_text(generate(args.lines, seed=args.seed))
        print(f"wrote {args.lines} lines to {args.output}")


if __name__ == "__main__":
    main()
