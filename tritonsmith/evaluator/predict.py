"""Predicted GPU time: what a candidate would take on the target GPU, from what the compiler
reports for that target and what a profiled forward pass does, without a GPU.

A search without a GPU ranks its candidates by this figure, labelled with the GPU modelled for
the first target ("predicted H100 SXM time", `GPU_MODELS`) wherever it is shown; interpreter time
stays a secondary figure (DESIGN.md, "What a CPU search optimises"). The model, per launch (`profile.py` counts the inputs at the profiled sizes):

- **Occupancy.** Programs resident per SM are the compiler's `blocks_per_sm` (registers, shared
  memory, threads: compile.py); a launch runs in `waves` of `SMs × blocks_per_sm` programs.
- **Memory.** Each tensor's first pass comes from DRAM (bytes read up to its size, and bytes
  written up to its size); what is read again is reuse served by L2 at L2 bandwidth; register
  spills go to local memory, once per program or, inside a loop, on every iteration (the machine
  code says where they are), served by L2 while what the resident programs' loops spill fits in
  it and by DRAM past that. Bandwidth is reached only with enough bytes
  in flight (Little's law): resident programs × the bytes one memory instruction moves (× the
  pipeline stages of a loop with `tl.dot`), against bandwidth × latency. A 16-element block
  keeps too little in flight to use HBM, however many programs there are. And each wave lasts
  at least its longest program's chain of loads × latency: one program walking a whole vector
  alone is latency-bound, whatever the average program does.
- **Compute.** `tl.dot` FLOPs at the tensor-core rate for their input type (IEEE fp32 at the FMA
  rate); warp instructions (every operation on every warp, `profile.py`) at four per SM per
  clock. Both are quantised by waves at SM granularity: the busiest SM runs `ceil(P / SMs)`
  programs.
- **Launch.** A fixed cost per launch; PyTorch operators between kernels cost their bytes at
  DRAM bandwidth (and matrix products their FLOPs) plus a launch each.
- **Host.** Issuing the launches and operators from Python takes the host `host_seconds`; a pass
  whose GPU work is shorter waits for the host (`HOST_LAUNCH_S`, `HOST_OP_S`).

A launch takes the largest of its memory, instruction and tensor-core times (they overlap) plus
its launch cost; the pass, the longer of its GPU time and its host time. The figures are datasheet numbers of the GPU modelled for the target
(`GPU_MODELS`: A100, RTX A6000, L40S, H100, B200); `bench/predict_calibration.py` measures how
well the ranking agrees with published GPU timings, `bench/gpu_search.sh` with a lent GPU's.

Nothing here imports torch or triton.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["GPU_MODELS", "GpuModel", "LaunchEstimate", "Prediction", "gpu_model", "gpu_note", "launch_estimate",
           "launch_key", "predict", "predicted_label"]


@dataclass(frozen=True)
class GpuModel:
    """A GPU as the predictor sees it (datasheet figures; dense tensor-core rates)."""

    name: str
    sms: int
    dram_bytes_s: float
    l2_bytes_s: float
    clock_hz: float
    fma_flops: float  # fp32 FMA pipes, FLOP/s
    tensor_flops: Mapping[str, float]  # input kind -> FLOP/s
    l2_bytes: float = 50e6  # L2 capacity: local memory that fits stays there
    launch_s: float = 2.5e-6
    latency_s: float = 650e-9  # DRAM round trip a load waits
    max_blocks_per_sm: int = 32
    threads_per_sm: int = 2048


# Datasheet figures (boost clock; dense tensor-core rates with FP32 accumulation where the part
# has both; a type a part lacks falls back to the next slower one). Shared memory, registers and
# the per-SM thread and block limits the compiler's occupancy uses are compile.py's
# `target_limits`; `threads_per_sm` and `max_blocks_per_sm` here repeat them for launches whose
# compile is unknown.
A100_SXM = GpuModel(
    name="A100 SXM", sms=108, dram_bytes_s=2.04e12, l2_bytes_s=4.0e12, clock_hz=1.41e9, fma_flops=19.5e12, l2_bytes=40e6,
    tensor_flops={"tf32": 156e12, "fp16": 312e12, "bf16": 312e12, "fp8": 312e12, "int8": 624e12},
)
RTX_A6000 = GpuModel(
    name="RTX A6000", sms=84, dram_bytes_s=768e9, l2_bytes_s=2.0e12, clock_hz=1.8e9, fma_flops=38.7e12, l2_bytes=6e6,
    tensor_flops={"tf32": 77.4e12, "fp16": 154.8e12, "bf16": 154.8e12, "fp8": 154.8e12, "int8": 309.7e12},
    latency_s=550e-9, max_blocks_per_sm=16, threads_per_sm=1536,
)
L40S = GpuModel(
    name="L40S", sms=142, dram_bytes_s=864e9, l2_bytes_s=3.0e12, clock_hz=2.52e9, fma_flops=91.6e12, l2_bytes=96e6,
    tensor_flops={"tf32": 183e12, "fp16": 362e12, "bf16": 362e12, "fp8": 733e12, "int8": 733e12},
    latency_s=550e-9, max_blocks_per_sm=24, threads_per_sm=1536,
)
H100_SXM = GpuModel(
    name="H100 SXM", sms=132, dram_bytes_s=3.35e12, l2_bytes_s=5.5e12, clock_hz=1.755e9, fma_flops=67e12, l2_bytes=50e6,
    tensor_flops={"tf32": 494e12, "fp16": 989e12, "bf16": 989e12, "fp8": 1979e12, "int8": 1979e12},
)
B200 = GpuModel(
    name="B200", sms=148, dram_bytes_s=8.0e12, l2_bytes_s=10.0e12, clock_hz=1.965e9, fma_flops=80e12, l2_bytes=126e6,
    tensor_flops={"tf32": 1.1e15, "fp16": 2.25e15, "bf16": 2.25e15, "fp8": 4.5e15, "int8": 4.5e15},
)
GPU_MODELS: dict[int, GpuModel] = {80: A100_SXM, 86: RTX_A6000, 89: L40S, 90: H100_SXM, 100: B200}
"""Compute capability -> the GPU modelled for it: the part users of that architecture most often
have (an RTX 3090 or 4090 differs from the A6000 or L40S in SM count and bandwidth, not in kind)."""


def _arch(target: str) -> int:
    digits = "".join(ch for ch in target.split("_")[-1] if ch.isdigit())
    return int(digits) if digits else 90


def gpu_model(target: str) -> GpuModel:
    """The model for `target` (`sm_86`, `sm_90a`); the nearest older one for others (`gpu_note`)."""
    arch = _arch(target)
    if arch in GPU_MODELS:
        return GPU_MODELS[arch]
    return GPU_MODELS[max((a for a in GPU_MODELS if a <= arch), default=min(GPU_MODELS))]


def gpu_note(target: str) -> str | None:
    """Why the model for `target` is an approximation, or None when it is the target's own."""
    if _arch(target) in GPU_MODELS:
        return None
    return f"no model of {target}: predicted as {gpu_model(target).name}"


def predicted_label(target: str) -> str:
    """"predicted H100 SXM time": what a ranking by predicted time is a ranking of."""
    return f"predicted {gpu_model(target).name} time"


def launch_key(kernel: str, constexprs: Mapping[str, Any], num_warps: int | None,
               num_stages: int | None) -> str:
    """One compile of a kernel: its name, constexprs and launch options, as a stable string."""
    shown = ",".join(f"{k}={constexprs[k]!r}" for k in sorted(constexprs))
    return f"{kernel}[{shown}]w{num_warps or 4}s{num_stages if num_stages is not None else '-'}"


@dataclass
class LaunchEstimate:
    """One launch's predicted time and what bounds it."""

    kernel: str
    seconds: float
    bound: str  # "memory", "instructions", "tensor cores", "launch"
    programs: int
    waves: float
    blocks_per_sm: int
    memory_efficiency: float  # share of DRAM bandwidth the bytes in flight can use
    dram_bytes: float
    l2_bytes: float
    flops: float
    lane_utilisation: float
    resources_known: bool
    config: str = ""  # an autotuned launch: the Config the autotuner would pick ("BLOCK=128, num_warps=4")
    configs: int = 0  # ... and how many it tried

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 9) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


@dataclass
class Prediction:
    """A forward pass's predicted time on `gpu` for `target`."""

    target: str
    gpu: str
    seconds: float
    launches: list[LaunchEstimate] = field(default_factory=list)
    torch_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    # The GPU's time (launches and PyTorch operators) and the host's to issue them
    # (`host_seconds`): `seconds` is the longer.
    device_seconds: float = 0.0
    host_seconds: float = 0.0
    host_ops: int = 0  # PyTorch operators outside kernels (views and allocations included)

    @property
    def microseconds(self) -> float:
        return self.seconds * 1e6

    def label(self) -> str:
        """"predicted H100 SXM time 41.2 µs"."""
        return f"predicted {self.gpu} time {format_seconds(self.seconds)}"

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "gpu": self.gpu, "seconds": self.seconds,
                "launches": [launch.to_json() for launch in self.launches],
                "torch_seconds": self.torch_seconds, "device_seconds": self.device_seconds,
                "host_seconds": self.host_seconds, "host_ops": self.host_ops, "notes": self.notes}


def format_seconds(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def _blocks_per_sm(gpu: GpuModel, resources: Mapping[str, Any] | None, num_warps: int,
                   failed: bool = False) -> tuple[int, bool]:
    """Resident programs per SM: the compiler's figure; one, when the compile for the target
    failed (a time the model cannot ground is pessimistic, never the fastest); else the thread
    limit alone."""
    if resources and resources.get("blocks_per_sm") is not None:  # 0: the launch fails
        return int(resources["blocks_per_sm"]), True
    if failed:
        return 1, False
    return max(1, min(gpu.max_blocks_per_sm, gpu.threads_per_sm // (32 * max(1, num_warps)))), False


def _memory_traffic(launch: Mapping[str, Any]) -> tuple[float, float]:
    """(DRAM bytes, L2 bytes): each tensor's first pass from DRAM, the rest from L2."""
    dram = l2 = 0.0
    counted = 0.0
    for tensor in launch.get("tensors") or []:
        size = float(tensor.get("bytes") or 0.0)
        for moved in (float(tensor.get("read") or 0.0), float(tensor.get("written") or 0.0)):
            first = min(moved, size)
            dram += first
            l2 += moved - first
            counted += moved
    total = float(launch.get("load_bytes") or 0.0) + float(launch.get("store_bytes") or 0.0) \
        + float(launch.get("atomic_bytes") or 0.0)
    if total > counted:  # addresses outside every tensor argument (a pointer from elsewhere)
        dram += total - counted
    l2 += float(launch.get("atomic_bytes") or 0.0)  # atomics resolve in L2
    return dram, l2


def _spill_traffic(gpu: GpuModel, launch: Mapping[str, Any], resources: Mapping[str, Any] | None, programs: int,
                   threads: int, resident: int) -> tuple[float, float]:
    """(DRAM bytes, L2 bytes) the register spills move. A spill inside a loop is paid on every
    iteration (the machine code says which are, `compile.sass_local_memory`; the pass counts the
    iterations, `loop_iterations`), and comes from DRAM when what the resident programs' loops
    touch overflows L2; a spill outside loops is paid once per program, from L2. Without the
    machine code's split, every spill once per program, from L2."""
    r = resources or {}
    in_loops, outside = r.get("spill_bytes_in_loops"), r.get("spill_bytes_outside_loops")
    if in_loops is None or outside is None:
        return 0.0, (float(r.get("spills") or 0) + float(r.get("spill_loads") or 0)) * threads * programs
    iterations = float(launch.get("loop_iterations") or 0.0) or programs  # none counted: once per program
    looped = float(in_loops) * threads * iterations
    once = float(outside) * threads * programs
    if float(in_loops) * threads * resident > gpu.l2_bytes:
        return looped, once
    return 0.0, looped + once


def _estimate(gpu: GpuModel, launch: Mapping[str, Any], resources: Mapping[str, Any] | None,
              failed: bool = False) -> LaunchEstimate:
    programs = max(0, int(launch.get("programs") or 0))
    num_warps = int(launch.get("num_warps") or 4)
    blocks, known = _blocks_per_sm(gpu, resources, num_warps, failed)
    if programs == 0:
        return LaunchEstimate(str(launch.get("kernel")), gpu.launch_s, "launch", 0, 0.0, blocks, 1.0,
                              0.0, 0.0, 0.0, 1.0, known)
    if blocks <= 0:  # the launch fails (shared memory over the limit): never the fastest
        return LaunchEstimate(str(launch.get("kernel")), math.inf, "cannot launch", programs, math.inf, 0, 0.0,
                              0.0, 0.0, 0.0, 1.0, known)
    slots = gpu.sms * blocks
    waves = programs / slots
    dram, l2 = _memory_traffic(launch)
    spilled_dram, spilled_l2 = _spill_traffic(gpu, launch, resources, programs, 32 * num_warps, min(programs, slots))
    dram, l2 = dram + spilled_dram, l2 + spilled_l2
    memory_ops = float(launch.get("memory_ops") or 0.0)
    moved = float(launch.get("load_bytes") or 0.0) + float(launch.get("store_bytes") or 0.0)
    per_op = moved / memory_ops if memory_ops else 0.0
    flops = dict(launch.get("dot_flops") or {})
    stages = int(launch.get("num_stages") or (resources or {}).get("num_stages") or 1) if flops else 1
    in_flight = min(programs, slots) * per_op * max(1, stages)
    needed = gpu.dram_bytes_s * gpu.latency_s
    efficiency = min(1.0, in_flight / needed) if needed else 1.0
    memory_s = (dram / gpu.dram_bytes_s + l2 / gpu.l2_bytes_s) / max(efficiency, 1e-3)
    # Latency: each wave of resident programs lasts as long as its longest chain of loads (a
    # loop's loads wait in turn; `num_stages` keeps that many in flight in a tl.dot loop).
    chain = int(launch.get("max_program_loads") or 0) / max(1, stages)
    memory_s = max(memory_s, math.ceil(programs / slots) * chain * gpu.latency_s)
    busiest = math.ceil(programs / gpu.sms) * gpu.sms / programs  # wave quantisation at SM granularity
    issue_s = float(launch.get("warp_instructions") or 0.0) / (gpu.sms * 4 * gpu.clock_hz) * busiest
    tensor_s = sum(count / (gpu.fma_flops if kind == "fp32" else gpu.tensor_flops.get(kind, gpu.fma_flops))
                   for kind, count in flops.items()) * busiest
    bound, seconds = max((("memory", memory_s), ("instructions", issue_s), ("tensor cores", tensor_s)),
                         key=lambda pair: pair[1])
    if seconds < gpu.launch_s:
        bound = "launch"
    return LaunchEstimate(
        kernel=str(launch.get("kernel")), seconds=seconds + gpu.launch_s, bound=bound, programs=programs,
        waves=waves, blocks_per_sm=blocks, memory_efficiency=efficiency, dram_bytes=dram, l2_bytes=l2,
        flops=float(sum(flops.values())), lane_utilisation=float(launch.get("lane_utilisation") or 1.0),
        resources_known=known,
    )


def launch_estimate(launch: Mapping[str, Any], target: str, resources: Mapping[str, Any] | None = None,
                    failed: bool = False) -> LaunchEstimate:
    """One profiled launch's estimate on `target`. Without `resources` it is a lower bound of
    the estimate with them: occupancy from the thread count alone is the most the registers and
    shared memory can allow, and no spills are counted (`predicted.py` compiles an autotuner's
    Configs in that bound's order and stops where no Config left can win)."""
    return _estimate(gpu_model(target), launch, resources, failed)


def _config_text(launch: Mapping[str, Any]) -> str:
    shown = [f"{k}={v}" for k, v in sorted((launch.get("constexprs") or {}).items())]
    shown.append(f"num_warps={launch.get('num_warps') or 4}")
    if launch.get("num_stages") is not None:
        shown.append(f"num_stages={launch['num_stages']}")
    return ", ".join(shown)


def _choose(trials: list[tuple[LaunchEstimate, str]], launched: LaunchEstimate) -> LaunchEstimate:
    """What an autotuner on the target picks among its Configs' trials: the fastest that can
    launch there and whose time is grounded in its compile; a Config that cannot launch (too
    much shared memory) is skipped, as the autotuner skips it. With no grounded trial, the
    slowest that can launch (pessimistic, never the fastest); with none that can, the launch."""
    grounded = [(e, c) for e, c in trials if e.resources_known and math.isfinite(e.seconds)]
    launchable = [(e, c) for e, c in trials if math.isfinite(e.seconds)]
    if grounded:
        best, config = min(grounded, key=lambda pair: pair[0].seconds)
    elif launchable:
        best, config = max(launchable, key=lambda pair: pair[0].seconds)
    else:
        return launched
    return replace(best, config=config, configs=len(trials))


def predict(profile: Mapping[str, Any], resources: Mapping[str, Mapping[str, Any]], target: str = "sm_90",
            failed: Iterable[str] = ()) -> Prediction:
    """The predicted time of the profiled forward pass on `target`.

    Args:
        profile: the `profile` job's result (`launches`, `torch_ops`).
        resources: `launch_key(...)` -> the compile's resources for that launch (compile.py);
            a launch without them is predicted from its thread count alone, and a note says so.
        failed: the launch keys whose compile for the target failed: predicted pessimistically.
    """
    gpu = gpu_model(target)
    estimates: list[LaunchEstimate] = []
    notes: list[str] = [note] if (note := gpu_note(target)) else []
    failures = set(failed)
    trials: dict[str, list[tuple[LaunchEstimate, str]]] = {}
    for launch in profile.get("launches") or []:
        key = launch_key(str(launch.get("kernel")), launch.get("constexprs") or {}, launch.get("num_warps"),
                         launch.get("num_stages"))
        estimate = _estimate(gpu, launch, resources.get(key), key in failures)
        if tuning := launch.get("tuning"):  # one Config's trial: a candidate, not part of the pass
            trials.setdefault(str(tuning.get("group")), []).append((estimate, _config_text(launch)))
            continue
        if (group := launch.get("tuned")) and trials.get(str(group)):
            estimate = _choose(trials[str(group)], estimate)
        estimates.append(estimate)
    unknown = sorted({e.kernel for e in estimates if not e.resources_known})
    if unknown:
        notes.append(f"no compile resources for {', '.join(unknown)}: occupancy from the thread count alone "
                     "(one program per SM where its compile failed)")
    for estimate in estimates:
        if estimate.configs and estimate.config and not any(n.startswith(f"{estimate.kernel}: the autotuner") for n in notes):
            notes.append(f"{estimate.kernel}: the autotuner would pick {estimate.config} "
                         f"({format_seconds(estimate.seconds)}) of {estimate.configs} Configs")
    torch_s = 0.0
    for name, op in sorted((profile.get("torch_ops") or {}).items()):
        calls = float(op.get("calls") or 0.0)
        op_s = float(op.get("bytes") or 0.0) / gpu.dram_bytes_s + float(op.get("flops") or 0.0) / gpu.fma_flops
        torch_s += op_s + calls * gpu.launch_s
        notes.append(f"PyTorch {name} ×{int(calls)}: {format_seconds(op_s + calls * gpu.launch_s)}")
    device_s = sum(e.seconds for e in estimates) + torch_s
    host_ops = int(profile.get("host_ops") or 0)
    host_s = host_seconds(len(estimates), host_ops)
    if host_s > device_s > 0:
        notes.append(f"host-bound: issuing {len(estimates)} launch{'es' if len(estimates) != 1 else ''} and "
                     f"{host_ops} PyTorch calls takes about {format_seconds(host_s)}, "
                     f"longer than the GPU's {format_seconds(device_s)}")
    return Prediction(target=target, gpu=gpu.name, seconds=max(device_s, host_s), launches=estimates,
                      torch_seconds=torch_s, notes=notes, device_seconds=device_s, host_seconds=host_s,
                      host_ops=host_ops)


# The host's side, chosen by `bench/predict_calibration.py fit` on calibration problems 18, 29 and
# 40 and checked on 42 and 44 (docs/benchmarks.md, "Predicted time against GPU measurements"): a
# pass of a few small launches is host-bound on a real GPU, and a benchmark that times the whole
# call measures the host. The examples and the search's test problems are sized so that the GPU's
# work dominates, as real workloads do; at a toy size every variant is the same host time, which is
# what a GPU would show too (`Prediction.device_seconds` keeps the GPU's part).
HOST_CALL_S = 0.0
"""The host's time to call the forward pass (a module call, its Python) before anything launches."""
HOST_LAUNCH_S = 46e-6
"""The host's time to issue one Triton launch from Python (argument binding, the specialisation
key, the driver call); an autotuned launch's cache lookup is within it."""
HOST_OP_S = 1.5e-6
"""The host's time for one PyTorch operator outside kernels (dispatch, allocation, a view)."""


def host_seconds(launches: int, host_ops: int) -> float:
    """How long the host takes to issue a forward pass of `launches` Triton launches and
    `host_ops` PyTorch operators. Launches are asynchronous: a pass whose GPU work is shorter than
    this waits for the host, and a benchmark that times the whole call (KernelBench's, with CUDA
    events) measures this instead (`predict` takes the longer of the two)."""
    return HOST_CALL_S + launches * HOST_LAUNCH_S + host_ops * HOST_OP_S


def launches_to_compile(profile: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Kernel -> the distinct (constexprs, options) its profiled launches used, for compile.py."""
    out: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()
    for launch in profile.get("launches") or []:
        kernel = str(launch.get("kernel"))
        key = launch_key(kernel, launch.get("constexprs") or {}, launch.get("num_warps"), launch.get("num_stages"))
        if key in seen:
            continue
        seen.add(key)
        options = {"num_warps": int(launch.get("num_warps") or 4)}
        if launch.get("num_stages") is not None:
            options["num_stages"] = int(launch["num_stages"])
        out.setdefault(kernel, []).append({"constexprs": dict(launch.get("constexprs") or {}), "options": options,
                                           "key": key, "types": dict(launch.get("types") or {})})
    return out


def keyed_resources(results: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """`launch_key` -> resources, from compile results that carry their key (`launch_key` field)."""
    return {str(r["launch_key"]): r["resources"] for r in results if r.get("launch_key") and r.get("resources")}
