"""Worker side of correctness verification: the `verify_inputs`, `verify_candidate` and
`verify_reference` jobs (the protocol and why it is split so is in `verify.py`), for KernelBench
problems and in-file harnesses alike (`_problem` turns either into inputs and a model).

Imported lazily by the worker (it imports torch inside functions, and runs user code). Files
are exchanged through a data directory the parent creates and passes as an absolute path:

- `init.pt`: the init inputs (written by verify_inputs; both models are built from them
  under the same seed, nothing is copied between them);
- `inputs_<t>.pt`: trial t's forward inputs (verify_inputs);
- `candidate_<t>.pt`: the candidate's outputs for trial t (verify_candidate).

Expected outputs are never written: verify_reference computes them after the candidate has run
and compares in its own process. Every load uses `weights_only=True`, so a file the candidate
wrote cannot run code in the reference's process.

Beyond the trials, the candidate job runs the dynamic defenses of verification.md on trial 1's
inputs: launch accounting (at least one Triton launch per forward), a determinism run with a
different poison in uninitialised memory (exploit 15), fault injection (every launch raises: the
candidate must fail, exploit 3) and ghost replay (each kernel in turn does nothing: the output
must change, exploit 2). The reference job lints the task itself (exploit 13).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import itertools
import linecache
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from .cuda_shim import cpu_shim
from .integrity import host_bytes

__all__ = [
    "compare_outputs",
    "cpu_shim",
    "degenerate_task",
    "handle_candidate",
    "handle_inputs",
    "handle_reference",
    "import_file",
    "load_problem",
]

_serial = itertools.count()

def _prepare(payload: dict[str, Any]) -> str:
    """Set up the process for the payload's mode; returns the torch device to use. Reports
    progress once torch (and under the interpreter Triton) is imported, so the hang limit
    counts from there (progress.py)."""
    from .progress import progress

    if payload.get("mode", "interpreter") == "interpreter":
        os.environ["TRITON_INTERPRET"] = "1"  # the pool sets it too; triton reads it lazily
        cpu_shim()
        progress("ready")
        return "cpu"
    progress("ready")
    return "cuda"


def import_file(path: str, role: str, sha256: str | None = None) -> ModuleType:
    """Import a real file under a fresh module name (`@triton.jit` needs real source lines),
    registered in `sys.modules` (for dataclasses and pickling) until the caller drops it.

    With `sha256` (what the server wrote), the file is read once, checked, and only those
    bytes are used: the module runs from them and `linecache` keeps them as the file's lines
    (where Triton reads a kernel's source), so nothing written to the path afterwards (by a
    candidate running beside it in the same runs folder) reaches this import."""
    name = f"_tritonsmith_{role}_{next(_serial)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        if sha256 is None:
            spec.loader.exec_module(module)
        else:
            data = Path(path).read_bytes()
            if hashlib.sha256(data).hexdigest() != sha256:
                raise SourceAltered(f"the {role}'s source was altered after it was written "
                                    "(exploit 19: editing the harness's files)")
            text = data.decode("utf-8")
            linecache.cache[path] = (len(data), None, text.splitlines(keepends=True), path)  # never re-read
            exec(compile(data, path, "exec", dont_inherit=True), module.__dict__)  # noqa: S102
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


@contextmanager
def _dropped(module: ModuleType) -> Iterator[ModuleType]:
    try:
        yield module
    finally:
        sys.modules.pop(module.__name__, None)


class SourceAltered(RuntimeError):
    """A file the server wrote is not what it wrote any more."""


@contextmanager
def _module(path: str, role: str, payload: dict[str, Any]) -> Iterator[ModuleType]:
    """`import_file` for the length of a job, checked against the job's digests."""
    with _dropped(import_file(path, role, written(payload, path))) as module:
        yield module


def written(payload: dict[str, Any], path: str) -> str | None:
    """The sha256 the server recorded for `path` when it wrote it, if it did."""
    return (payload.get("sha256") or {}).get(path)


def _to(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to(v, device) for v in value)
    return value


def _clone(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v) for v in value)
    return value


def _tensor_hash(tensor: Any) -> str:
    digest = hashlib.sha256()
    flat = tensor.detach().contiguous().reshape(-1)
    digest.update(f"{tuple(tensor.shape)}|{tensor.dtype}".encode())
    digest.update(host_bytes(flat.cpu()))
    return digest.hexdigest()


def _hash_all(values: Any) -> list[str]:
    import torch

    return [_tensor_hash(v) if isinstance(v, torch.Tensor) else repr(v) for v in values]


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load(path: Path) -> Any:
    import torch

    return torch.load(path, map_location="cpu", weights_only=True)


class Problem:
    """A spec as the workers see it: how to draw a trial's inputs and build either model."""

    def __init__(self, module: ModuleType, problem: dict[str, Any]) -> None:
        self.module = module
        self.harness = problem.get("format") == "harness"
        self.launcher = str(problem.get("launcher") or "")
        # Standard-normal draws in place of the floating-point inputs, for a task whose own
        # inputs cannot tell the operator from a trivial answer (ELU on torch.rand: identity).
        self.redraw = bool(problem.get("redraw"))

    def inputs(self, device: str = "cpu") -> list[Any]:
        """One trial's forward arguments (call under the trial's seed). On a GPU, tensors made
        without a device are made on it: KernelBench's `torch.randn(4096, 393216)` would take
        seconds and 6 GB of host memory per draw on the CPU."""
        import torch

        function = getattr(self.module, f"{self.launcher}_inputs") if self.harness else self.module.get_inputs
        with torch.device("cuda") if device == "cuda" else contextlib.nullcontext():
            value = function()
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if self.redraw:
            values = [torch.randn_like(v) if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                      for v in values]
        return values

    def init_inputs(self) -> list[Any]:
        return [] if self.harness else list(self.module.get_init_inputs())

    def model(self, role: str, init_inputs: list[Any]) -> Any:
        """`Model(*init)` / `ModelNew(*init)`, or the harness's function as a module; each
        call of it reports progress to the pool's hang watchdog (progress.heartbeat)."""
        from .progress import heartbeat, progress

        progress("built")
        if not self.harness:
            cls = self.module.Model if role == "reference" else self.module.ModelNew
            return heartbeat(cls(*init_inputs))
        name = f"{self.launcher}_reference" if role == "reference" else self.launcher
        return heartbeat(_function_module(getattr(self.module, name)))


def _function_module(function: Callable[..., Any]) -> Any:
    import torch

    class FunctionModule(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.function = function

        def forward(self, *args: Any) -> Any:
            return self.function(*args)

    return FunctionModule()


def load_problem(module: ModuleType, payload: dict[str, Any]) -> Problem:
    return Problem(module, dict(payload.get("problem") or {"format": "kernelbench"}))


def _build_reference(problem: Problem, seed: int, device: str) -> tuple[Any, list[Any]]:
    """`Model(*get_init_inputs())` under `manual_seed(seed)`, as KernelBench builds it."""
    import torch

    torch.manual_seed(seed)
    init_inputs = problem.init_inputs()
    torch.manual_seed(seed)
    with torch.no_grad():
        model = problem.model("reference", _to(init_inputs, device))
    return model.to(device), init_inputs  # training mode, as KernelBench runs both models


def _outputs(output: Any) -> list[Any]:
    return list(output) if isinstance(output, (tuple, list)) else [output]


PLAIN = (bool, int, float, str, type(None))
"""Plain Python values an output may be beside tensors (a library launcher's `(y, BLOCK_SIZE,
num_warps, is_contiguous)`): compared for equality, floats within the fp32 tolerance."""


def _detached(value: Any) -> Any:
    """An output as saved and compared: a tensor's detached CPU copy, a plain value as is."""
    import torch

    return value.detach().cpu().clone() if isinstance(value, torch.Tensor) else value


def _output_type_error(i: int, out: Any) -> str | None:
    """Why output `i` cannot be judged: a tensor subclass (it can defer the work until read)
    or an object that is neither a tensor nor a plain value."""
    import torch

    if type(out) is torch.Tensor or (type(out) in PLAIN):
        return None
    kind = f"{type(out).__module__}.{type(out).__qualname__}"
    if isinstance(out, torch.Tensor):
        return f"output {i} is a {kind}, not exactly torch.Tensor (exploit 9: tensor subclass deferring the work)"
    return (f"output {i} is a {kind}: an output must be a torch.Tensor or a plain value (int, float, bool, "
            "str, None), which are compared for equality (exploit 9: an object deferring the work)")


def _os_threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def handle_inputs(payload: dict[str, Any]) -> dict[str, Any]:
    """verify_inputs: build the reference model, draw trial seeds, save init inputs
    and each trial's inputs. Returns the trial seeds and the saved files' hashes."""
    import torch

    device = _prepare(payload)
    data = Path(payload["data_dir"])
    seed = int(payload.get("seed", 42))
    with _module(payload["reference"], "reference", payload) as module:
        problem = load_problem(module, payload)
        if payload.get("hollow"):  # a hollow profile (hollow.py) needs the init inputs alone
            torch.manual_seed(seed)
            init_inputs = problem.init_inputs()
            torch.save({"init_inputs": init_inputs}, data / "init.pt")
            return {"trial_seeds": [], "input_hashes": [], "input_shapes": [],
                    "init_hash": _file_hash(data / "init.pt"), "forward_s": None}
        model, init_inputs = _build_reference(problem, seed, device)
        torch.save({"init_inputs": init_inputs}, data / "init.pt")
        torch.manual_seed(42)
        trial_seeds = [int(s) for s in torch.randint(0, 2**31 - 1, (int(payload["trials"]),))]
        hashes = []
        shapes = []
        for t, trial_seed in enumerate(trial_seeds):
            torch.manual_seed(trial_seed)
            inputs = [_clone(v) for v in problem.inputs(device)]
            path = data / f"inputs_{t}.pt"
            torch.save(_to(inputs, "cpu"), path)
            hashes.append(_file_hash(path))
            shapes.append([list(v.shape) if isinstance(v, torch.Tensor) else repr(v) for v in inputs])
        forward_s = _forward_seconds(model, inputs, device) if trial_seeds else None
    return {"trial_seeds": trial_seeds, "input_hashes": hashes, "input_shapes": shapes,
            "init_hash": _file_hash(data / "init.pt"), "forward_s": forward_s}


def _forward_seconds(model: Any, inputs: list[Any], device: str) -> float:
    """The reference's own time for one forward pass (the last trial's inputs, already saved;
    a first call, so it includes any warm-up: the hang limit built on it errs on the long side)."""
    import torch

    if device == "cuda":
        torch.cuda.synchronize()
    began = time.perf_counter()
    with torch.no_grad():
        model(*inputs)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - began


_EXPLOIT_8 = "(exploit 8: background thread finishing the work after forward returns)"
_EXPLOIT_8_ANY = "(exploit 8: work done outside the one recorded thread: a thread, a process or native code)"
_EXPLOIT_10_ANY = "(exploit 10: monkey-patching the harness, timer or torch, by any route)"
POISONS = (float("nan"), 12345.678)
"""Uninitialised memory holds the first during the trials, the second in the determinism run."""


def handle_candidate(payload: dict[str, Any]) -> dict[str, Any]:
    """`_check_candidate`, whose launches are told even when it raises: a failure inside the
    interpreter is told apart from the kernel's own by compiling the kernel with the types and
    constexpr values it was launched with (reports.settle_reports)."""
    try:
        return _check_candidate(payload)
    except Exception as error:
        from .guards import LaunchGuard

        guard = LaunchGuard._installed
        if guard is not None:
            with contextlib.suppress(Exception):  # an exception type that refuses attributes
                error.tritonsmith_details = {  # type: ignore[attr-defined]
                    "launch_types": dict(guard.arg_types), "launch_constexprs": dict(guard.constexpr_values)}
        raise


def _check_candidate(payload: dict[str, Any]) -> dict[str, Any]:
    """verify_candidate: run the candidate on every trial's inputs and save its outputs, then
    (unless `payload["checks"]` is false) the dynamic defenses on trial 1's inputs.

    Imports only the candidate's file. Returns `{"error": ...}` (rather than raising) for a
    check that failed, naming the trick; an exception from the candidate itself propagates
    and the worker reports it.
    """
    import torch

    from .attribution import WorkRecorder
    from .guards import LaunchGuard, poisoned
    from .integrity import Fence, FenceBreach, RoundTrips, Snapshot

    device = _prepare(payload)
    data = Path(payload["data_dir"])
    seed = int(payload.get("seed", 42))
    tolerances = {str(k): float(v) for k, v in (payload.get("tolerances") or {"float32": 1e-4}).items()}
    init = _load(data / "init.pt")
    # Start torch's own thread pools (and on a GPU the driver's threads) before the baseline,
    # so only the candidate's threads count.
    (torch.ones(64, 64) @ torch.ones(64, 64)).add_(1).sum().item()
    with WorkRecorder([]):  # its first use imports torch._dynamo, which rebinds torch.manual_seed:
        torch.ones(1).add(1)  # done before the snapshot, so only the candidate's changes count
    from .accounting import warm

    warm()  # the profiler's threads start before the candidate's are counted
    if device == "cuda":
        from .warmup import warm_up_cuda

        warm_up_cuda()
    guard = LaunchGuard.install()
    guard.arg_types.clear()  # this job's launches only: the worker is reused between jobs
    guard.constexpr_values.clear()
    with poisoned(POISONS[0]):
        pass  # wrap the allocators before the candidate's module binds them
    fence = Fence.install() if device == "cpu" else None
    trips = RoundTrips.install(guard)
    untouched = Snapshot()  # after the verifier's own wrappers, before any candidate code
    python_threads = set(threading.enumerate())
    os_threads = _os_threads()

    def thread_error(when: str) -> str | None:
        extra = [t.name for t in threading.enumerate() if t not in python_threads and t.is_alive()]
        if extra:
            return f"started a background thread {when} ({', '.join(extra)}) {_EXPLOIT_8}"
        if _os_threads() > os_threads:
            return f"started {_os_threads() - os_threads} OS thread(s) {when} {_EXPLOIT_8}"
        return None

    def tampered(when: str) -> str | None:
        """Whether the candidate tried to leave its one thread, or changed the code the verifier
        calls in this process (integrity.py), by any route."""
        when = f" {when}" if when else ""
        if fence is not None and fence.attempts:
            return f"the candidate {fence.attempts[0]}{when} {_EXPLOIT_8_ANY}"
        if changes := untouched.changes():
            shown = ", ".join(changes[:3]) + (f" and {len(changes) - 3} more" if len(changes) > 3 else "")
            return f"the candidate changed the code the verifier runs: {shown}{when} {_EXPLOIT_10_ANY}"
        return None

    def run(model: Any, inputs: list[Any], poison: float, recorder: Any = None) -> list[Any]:
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()  # no freed block of an earlier run to land on (exploit 5)
        guard.observer = recorder
        try:
            with poisoned(poison), torch.no_grad(), recorder or contextlib.nullcontext():
                with trips:
                    returned = model(*inputs)
                output = _outputs(returned)
        finally:
            guard.observer = None
        if device == "cuda":
            torch.cuda.synchronize()
        if (why := trips.refusal("in a forward pass")) is not None:
            raise _RoundTrip(why)
        return output

    try:
        with fence or contextlib.nullcontext():
            return _candidate_trials(payload, device, data, seed, tolerances, init, guard, thread_error,
                                     tampered, run)
    except FenceBreach:
        pass
    except _RoundTrip as trip:
        return {"error": str(trip), "stage": "work"}
    return {"error": tampered("") or "the candidate left its thread", "retire": True}


class _RoundTrip(Exception):
    """Raised by the verifier after a forward pass that carried its work to the host (integrity.RoundTrips)."""


def _candidate_trials(payload: dict[str, Any], device: str, data: Path, seed: int, tolerances: dict[str, float],
                      init: Any, guard: Any, thread_error: Callable[[str], str | None],
                      tampered: Callable[[str], str | None], run: Callable[..., list[Any]]) -> dict[str, Any]:
    """The trials and the dynamic defenses, with the candidate's code fenced in (`_check_candidate`)."""
    import torch

    from .accounting import profiled
    from .attribution import WorkRecorder, token_kernels
    from .guards import InjectedLaunchFailure

    launches: dict[str, int] = {}
    recorders: list[Any] = []
    sealed: list[str] = []
    held: list[Any] = []
    held_hash = None
    with _module(payload["candidate"], "candidate", payload) as module:
        problem = load_problem(module, payload)
        if (error := thread_error("on import") or tampered("on import")) is not None:
            return {"error": error, "retire": True}
        torch.manual_seed(seed)
        with torch.no_grad():
            model = problem.model("candidate", _to(init["init_inputs"], device))
        if (error := tampered("while building the model")) is not None:
            return {"error": error, "retire": True}
        # Built under the reference's seed, as KernelBench does; nothing is copied from the
        # reference, so a candidate that re-initialises or folds its parameters is judged on that.
        model = model.to(device)  # training mode, as KernelBench runs both (BatchNorm uses batch statistics)
        first: list[Any] = []
        answers: dict[tuple[str, ...], tuple[int, list[str]]] = {}  # output hashes -> (trial, input hashes)
        repeats: list[list[int]] = []  # [trial, earlier trial] with the very same outputs
        given: Any = None  # trial 1's input tensors, refilled with each later trial's values
        unseen: list[str] = []  # kernels whose doing nothing leaves the output as it was
        returned: list[Any] = []
        for t in range(len(payload["trial_seeds"])):
            inputs = _to(_load(data / f"inputs_{t}.pt"), device)
            # The candidate gets copies, hashes taken on them. Later trials reuse trial 1's very
            # tensors with the new values written in, as a timing loop reuses its buffers: a
            # result kept by tensor identity, address or `lru_cache` answers the old values.
            pristine = given = _clone(inputs) if given is None else _refill(given, inputs)
            before = _hash_all(pristine)
            recorder = WorkRecorder(pristine, hold=t == 0)
            # The first trial also runs under PyTorch's profiler, which sees every thread and
            # every dispatch route (accounting.py): compute the recorder missed was hidden from it.
            with guard.session() as counted, profiled() if t == 0 else contextlib.nullcontext() as accounting:
                outputs = run(model, pristine, POISONS[0], recorder)
            recorders.append(recorder)
            returned = outputs  # the very tensors, scrubbed before the next run on the same values
            poisoned_output = any(o.is_floating_point() and o.numel() and bool(o.isnan().all())
                                  for o in outputs if isinstance(o, torch.Tensor))  # named below
            if not poisoned_output and any(isinstance(o, torch.Tensor) for o in outputs) and all(
                    type(o) is torch.Tensor or type(o) in PLAIN for o in outputs):  # checked before the
                # launches: a cached answer needs no launch, and the cache is what to name
                earlier = answers.setdefault(tuple(_hash_all(outputs)), (t, before))
                if earlier[0] != t and earlier[1] != before:
                    if not counted:
                        return {"error": _caching(t, earlier[0])}
                    # Launched: caching only if the reference's own outputs differ for these two
                    # inputs (a task may map both to one answer); the reference's worker judges.
                    repeats.append([t, earlier[0]])
            if accounting is not None and (hidden := accounting.unseen(recorder.seen)):
                shown = ", ".join(f"{name} ×{count}" for name, count in sorted(hidden.items()))
                return {"error": (f"PyTorch computed {shown} where the work recorder could not see it (on another "
                                  "thread, or with the dispatch modes switched off) (exploit 1: PyTorch does the work "
                                  "instead of the kernel, hidden from the verifier)"), "retire": True}
            if not counted:
                return {"error": (f"trial {t + 1}: the forward pass launched no Triton kernel "
                                  "(exploit 2: kernel defined but never launched, PyTorch does the work)")}
            for name, count in counted.items():
                launches[name] = max(launches.get(name, 0), count)
            if (error := thread_error(f"in forward (trial {t + 1})") or tampered(f"in forward (trial {t + 1})")) is not None:
                return {"error": error, "retire": True}
            for i, out in enumerate(outputs):
                if (why := _output_type_error(i, out)) is not None:
                    return {"error": f"trial {t + 1}: {why}"}
            snapshot = _hash_all(outputs)
            if _hash_all(pristine) != before:
                changed = [i for i, (a, b) in enumerate(zip(before, _hash_all(pristine), strict=True)) if a != b]
                return {"error": (
                    f"trial {t + 1}: the candidate modified its inputs in place (input "
                    f"{', '.join(map(str, changed))}) (exploit 6: modified inputs make the reference trivial)")}
            time.sleep(0.02)  # anything still writing the output shows up now
            if _hash_all(outputs) != snapshot:
                return {"error": (
                    f"trial {t + 1}: the output changed after forward returned "
                    "(exploit 8: background work finishing after forward returns)")}
            saved = [_detached(o) for o in outputs]
            sealed.append(_seal(saved, data / f"candidate_{t}.pt"))
            if t == 0:
                first = saved
                held = _held_like(recorder.held, saved)
                held_hash = _seal([h.tensor for h in held], data / "held_0.pt")
        if payload.get("checks", True):
            inputs = _to(_load(data / "inputs_0.pt"), device)
            # Exploit 15: the same inputs with other garbage in uninitialised memory. It must
            # launch again: a result kept by the inputs' values answers without a kernel.
            with guard.session() as counted, _Scrubbed(returned, POISONS[1]) as scrubbed:
                returned = scrubbed.returned = run(model, _clone(inputs), POISONS[1])
                again = [_detached(o) for o in returned]
            if not counted:
                return {"error": ("called again with trial 1's values in new tensors, the forward pass launched no "
                                  "Triton kernel and returned its earlier answer (exploit 12: caching results "
                                  "across calls)")}
            if (difference := compare_outputs(first, again, tolerances)) is not None:
                unwritten = [i for i, out in enumerate(first) if isinstance(out, torch.Tensor)
                             and out.is_floating_point() and out.numel() and bool(out.isnan().all())]
                if unwritten:
                    return {"error": (
                        f"output {unwritten[0]} is uninitialised memory: the kernels never write it "
                        "(exploit 5: returning a fresh allocation that may hold a stale result)")}
                return {"error": (
                    f"two runs on trial 1's inputs differ when uninitialised memory holds a different "
                    f"poison: {difference} (exploit 15: reads memory it never wrote)")}
            # Exploit 3: with every launch failing, the candidate must fail too.
            try:
                with guard.session("fail"):
                    run(model, _clone(inputs), POISONS[0])
            except InjectedLaunchFailure:
                pass
            except Exception as exc:  # failing another way still means no silent fallback
                if "injected failure" not in str(exc):
                    raise
            else:
                return {"error": ("the candidate returned a result although every Triton launch failed "
                                  "(exploit 3: falling back to PyTorch when the kernel fails)")}
            # Exploit 2: each kernel in turn does nothing; the output must change. Judged with the
            # reference's answers (verify.py): a task whose output ignores its inputs may ignore a
            # kernel's work too (a ViT whose class token never attends to the patches).
            for name in sorted(launches):
                with guard.session("skip", {name}), _Scrubbed(returned, POISONS[0]) as scrubbed:
                    returned = scrubbed.returned = run(model, _clone(inputs), POISONS[0])
                    ghost = [_detached(o) for o in returned]
                if _hash_all(ghost) == _hash_all(first) \
                        and not _writes_module_state(model, guard, name, lambda: run(model, _clone(inputs), POISONS[0])):
                    unseen.append(name)
        if (error := tampered("after the trials")) is not None:
            return {"error": error, "retire": True}
    if (error := tampered("when its module was dropped")) is not None:  # finalizers run by now
        return {"error": error, "retire": True}
    attribution = recorders[0].summary() if recorders else {}
    if len(recorders) > 1:
        attribution["tokens"] = token_kernels(recorders[0].launches, recorders[1].launches)
    return {"trials": len(payload["trial_seeds"]), "launches": launches, "attribution": attribution,
            "launch_types": dict(guard.arg_types), "launch_constexprs": dict(guard.constexpr_values),
            "output_hashes": sealed, "repeats": repeats, "unseen": unseen, "held": [{"kernel": h.kernel, "launch": h.launch, "argument": h.argument,
                                               "source": h.source} for h in held], "held_hash": held_hash}


class _Scrubbed:
    """An earlier run's output tensors filled with `poison` for the next run. A kept output
    buffer that the run returns again (legitimate, as a timing loop's) then holds the old answer
    only where the kernels wrote it anew: skipped or partial writes show. Tensors the run does
    not return again get their values back (an output may alias the model's own state)."""

    def __init__(self, outputs: list[Any], poison: float) -> None:
        import torch

        self.kept = [(t, t.detach().clone()) for t in outputs if isinstance(t, torch.Tensor) and t.is_floating_point()]
        self.returned: list[Any] = []
        with torch.no_grad():
            for tensor, _ in self.kept:
                tensor.fill_(poison)

    def __enter__(self) -> _Scrubbed:
        return self

    def __exit__(self, *exc: object) -> None:
        import torch

        with torch.no_grad():
            for tensor, value in self.kept:
                if not any(tensor is r for r in self.returned):
                    tensor.copy_(value)


def _refill(given: Any, values: Any) -> Any:
    """`values` written into the tensors of `given` where shape, dtype and device agree (a copy
    of `values` elsewhere): the same objects and addresses with new contents."""
    import torch

    if isinstance(given, torch.Tensor) and isinstance(values, torch.Tensor) and given.shape == values.shape \
            and given.dtype == values.dtype and given.device == values.device:
        with torch.no_grad():
            given.copy_(values)
        return given
    if isinstance(given, (list, tuple)) and isinstance(values, (list, tuple)) and len(given) == len(values):
        return type(values)(_refill(g, v) for g, v in zip(given, values, strict=True))
    return _clone(values)


def _caching(trial: int, earlier: int) -> str:
    return (f"trial {trial + 1} returned exactly trial {earlier + 1}'s output for different inputs "
            "(exploit 12: caching results across calls)")


def _held_like(held: list[Any], outputs: list[Any]) -> list[Any]:
    """The held launch arguments that could be one of the outputs: as many elements as one."""
    import torch

    sizes = {o.numel() for o in outputs if isinstance(o, torch.Tensor) and o.is_floating_point()}
    return [h for h in held if h.tensor.numel() in sizes]


def _seal(outputs: list[Any], path: Path) -> str:
    """Save a trial's outputs and return the digest of the bytes saved: serialised in memory and
    hashed before they reach the file, so anything the candidate writes there later (a finalizer,
    a later call) is caught when the reference's worker reads them (`handle_reference`)."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(outputs, buffer)
    data = buffer.getvalue()
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def _writes_module_state(model: Any, guard: Any, kernel: str, forward: Callable[[], Any]) -> bool:
    """Whether `kernel`'s work reaches the model's own state: its parameters and buffers after a
    forward pass differ when the kernel does nothing (a BatchNorm kernel updating the running
    statistics in training mode does real work that the output does not show). Both passes
    start from the same state, which is put back afterwards."""
    import torch

    state = getattr(model, "state_dict", None)
    if not callable(state):
        return False
    tensors = {k: v for k, v in state(keep_vars=True).items() if isinstance(v, torch.Tensor)}
    if not tensors:
        return False
    before = {k: v.detach().clone() for k, v in tensors.items()}

    def after(mode: str) -> dict[str, Any]:
        with torch.no_grad():
            for k, v in tensors.items():
                v.copy_(before[k])
            with guard.session(mode, {kernel}):
                forward()
            return {k: v.detach().clone() for k, v in tensors.items()}

    try:
        normal, ghost = after("run"), after("skip")
    finally:
        with torch.no_grad():
            for k, v in tensors.items():
                v.copy_(before[k])
    return any(not torch.equal(normal[k], ghost[k]) for k in tensors)


def compare_outputs(expected: list[Any], actual: list[Any], tolerances: dict[str, float]) -> str | None:
    """None when `actual` matches `expected`, else one line naming the output, the largest
    absolute error and its index. NaN/Inf must match exactly (equal_nan=False semantics: a
    NaN where the reference has a number fails, NaN is no wildcard)."""
    import torch

    if len(expected) != len(actual):
        return f"returned {len(actual)} output(s), the reference {len(expected)}"
    for i, (ref, out) in enumerate(zip(expected, actual, strict=True)):
        where = f"output {i}" if len(expected) > 1 else "output"
        if not isinstance(ref, torch.Tensor):
            if (difference := _compare_plain(ref, out, tolerances["float32"])) is not None:
                return f"{where}: {difference}"
            continue
        if not isinstance(out, torch.Tensor) or type(out) is not torch.Tensor:
            return f"{where} is {type(out).__name__}, not torch.Tensor"
        if tuple(out.shape) != tuple(ref.shape):
            return f"{where} has shape {tuple(out.shape)}, the reference {tuple(ref.shape)}"
        if out.dtype != ref.dtype:
            return f"{where} has dtype {out.dtype}, the reference {ref.dtype}"
        tol = tolerances.get(str(ref.dtype).removeprefix("torch."), tolerances["float32"])
        if ref.numel() == 0:
            continue
        r, o = ref.double(), out.double()
        bad_special = (torch.isfinite(r) != torch.isfinite(o)) | (torch.isnan(r) != torch.isnan(o))
        bad_special |= torch.isinf(r) & torch.isinf(o) & (r != o)
        if bool(bad_special.any()):
            flat = int(bad_special.reshape(-1).nonzero()[0].item())
            index = tuple(int(v) for v in torch.unravel_index(torch.tensor(flat), ref.shape))
            return (f"{where}: {o.reshape(-1)[flat].item()} at index {index} where the reference has "
                    f"{r.reshape(-1)[flat].item()} (NaN/Inf must match)")
        if torch.allclose(o, r, atol=tol, rtol=tol, equal_nan=False):
            continue
        finite = torch.isfinite(r)
        error = torch.where(finite, (o - r).abs(), torch.zeros_like(r))
        flat = int(error.reshape(-1).argmax().item())
        index = tuple(int(v) for v in torch.unravel_index(torch.tensor(flat), ref.shape))
        mismatched = int((~torch.isclose(o, r, atol=tol, rtol=tol, equal_nan=False)).sum().item())
        return (f"{where}: max abs error {error.reshape(-1)[flat].item():.4g} at index {index} "
                f"(got {o.reshape(-1)[flat].item():.6g}, expected {r.reshape(-1)[flat].item():.6g}; "
                f"{mismatched} of {ref.numel()} elements outside atol=rtol={tol:g})")
    return None


def _compare_plain(ref: Any, out: Any, tol: float) -> str | None:
    """A plain output against the reference's: the same type (a bool is no int), equal, a float
    within `tol` (atol = rtol, NaN only where the reference has NaN)."""
    if type(out) is not type(ref):
        return f"{type(out).__name__} {out!r}, the reference {type(ref).__name__} {ref!r}"
    if isinstance(ref, float):
        if math.isnan(ref) or math.isnan(out):
            same = math.isnan(ref) and math.isnan(out)
        else:
            same = ref == out or abs(out - ref) <= tol + tol * abs(ref)
        return None if same else f"{out!r}, expected {ref!r} (atol=rtol={tol:g})"
    return None if out == ref else f"{out!r}, expected {ref!r}"


def degenerate_task(expected: list[Any], inputs: list[Any], tolerances: dict[str, float],
                    others: list[list[Any]] | None = None) -> str | None:
    """Why the task cannot tell a right answer from a trivial one (exploit 13), or None.

    Trivial candidates (all zeros, an input returned as is, a constant fixed in advance) must
    all fail against the reference's outputs, or a candidate could pass without computing
    anything. A constant is fixed in advance when the first trial's mean matches every trial's
    output (`others`: the other trials' outputs): a loss that sits near one value for each draw
    but moves with the draw is no constant a candidate could know (a scalar output always equals
    its own mean)."""
    import torch

    for i, ref in enumerate(expected):
        if not isinstance(ref, torch.Tensor) or ref.numel() == 0 or not ref.is_floating_point():
            continue
        where = f"output {i}" if len(expected) > 1 else "the output"
        tol = tolerances.get(str(ref.dtype).removeprefix("torch."), tolerances["float32"])
        r = ref.double()
        finite = r[torch.isfinite(r)]
        if finite.numel() == 0:
            continue
        trivial = {"all zeros": torch.zeros_like(r)}
        constant = torch.full_like(r, float(finite.mean()))
        later = [o[i].detach().cpu().double() for o in others or []
                 if i < len(o) and isinstance(o[i], torch.Tensor) and o[i].shape == ref.shape]
        if later and all(torch.allclose(constant, other, atol=tol, rtol=tol) for other in later) or not later and r.numel() > 1:
            trivial["a constant"] = constant
        for j, value in enumerate(inputs):
            if isinstance(value, torch.Tensor) and value.shape == ref.shape:
                trivial[f"input {j} returned as is"] = value.detach().cpu().double()
        for label, candidate in trivial.items():
            if torch.allclose(candidate, r, atol=tol, rtol=tol):
                return (f"{where} is matched by {label} within atol=rtol={tol:g}, so a candidate could pass "
                        "without computing anything (exploit 13: degenerate task); make the reference's "
                        "outputs larger or more varied")
    return None


def handle_reference(payload: dict[str, Any]) -> dict[str, Any]:
    """verify_reference: run the reference on each trial's inputs, regenerated under the trial
    seed, and compare with the candidate's saved outputs. Runs after the candidate, so no
    expected output existed while candidate code ran. Trial 1 also lints the task (exploit 13)."""
    import torch

    device = _prepare(payload)
    data = Path(payload["data_dir"])
    seed = int(payload.get("seed", 42))
    tolerances = {str(k): float(v) for k, v in payload["tolerances"].items()}
    from .attribution import WorkRecorder

    results: list[dict[str, Any]] = []
    degenerate = None
    elsewhere = None
    expected_hashes: list[list[str]] = []
    first: tuple[list[Any], list[Any]] | None = None  # trial 1's outputs and inputs, for the lint
    others: list[list[Any]] = []
    reference_ops: dict[str, int] = {}
    identity_ops: dict[str, int] = {}
    try:
        reference = import_file(payload["reference"], "reference", written(payload, payload["reference"]))
    except SourceAltered as altered:
        return {"error": str(altered), "trials": results}
    with _dropped(reference) as module:
        problem = load_problem(module, payload)
        model, _ = _build_reference(problem, seed, device)
        for t, trial_seed in enumerate(payload["trial_seeds"]):
            if _file_hash(data / f"inputs_{t}.pt") != payload["input_hashes"][t]:
                return {"error": f"trial {t + 1}: the saved inputs were altered after they were written "
                                 "(exploit 19: editing the harness's files)", "trials": results}
            torch.manual_seed(int(trial_seed))
            inputs = _to([_clone(v) for v in problem.inputs(device)], device)
            recorder = WorkRecorder(inputs, identities=True) if t == 0 else contextlib.nullcontext()
            with torch.no_grad(), recorder:
                output = model(*inputs)
            if isinstance(recorder, WorkRecorder):  # what the reference computes: the task's operators
                reference_ops = dict(recorder.torch_ops)
                identity_ops = dict(recorder.identity_ops)
            expected = [_detached(o) for o in _outputs(output)]
            if t == 0:
                first = (expected, _to(inputs, "cpu"))
                if payload.get("held"):
                    if _file_hash(data / "held_0.pt") != payload.get("held_hash"):
                        return {"error": "the candidate's held launch arguments were altered after they were sealed "
                                         "(exploit 19: editing the harness's files)", "trials": results}
                    elsewhere = answer_held(expected, _load(data / "held_0.pt"), payload["held"], tolerances)
            else:
                others.append(expected)
            sealed = payload.get("output_hashes")
            if sealed is not None and (t >= len(sealed) or _file_hash(data / f"candidate_{t}.pt") != sealed[t]):
                return {"error": f"trial {t + 1}: the candidate's saved outputs were altered after they were "
                                 "sealed (exploit 19: editing the harness's files)", "trials": results}
            expected_hashes.append(_hash_all(expected))
            actual = _load(data / f"candidate_{t}.pt")
            error = compare_outputs(expected, list(actual), tolerances)
            results.append({
                "trial": t + 1, "seed": int(trial_seed), "ok": error is None,
                "error": None if error is None else f"trial {t + 1} (seed {trial_seed}): {error}",
            })
    for t, earlier in payload.get("repeats") or []:
        if expected_hashes[t] != expected_hashes[earlier]:  # the reference's answers differ; the candidate's did not
            return {"error": _caching(t, earlier), "trials": results}
    if first is not None and payload.get("checks", True):
        degenerate = degenerate_task(*first, tolerances, others)
    return {"trials": results, "degenerate": degenerate, "reference_ops": reference_ops,
            "reference_identity_ops": identity_ops, "elsewhere": elsewhere,
            # The reference itself answers trials 1 and 2 alike: the same output twice is no cache,
            # and a kernel writing the same values for both draws is no token.
            "same_answers": len(expected_hashes) > 1 and expected_hashes[0] == expected_hashes[1]}


AFFINE_CORRELATION = 0.9999
"""|Pearson r| at or above which a held argument computed out of the recorder's sight is an affine
image of an output (the answer negated, scaled or shifted, for a kernel to undo)."""


def answer_held(expected: list[Any], held: list[Any], meta: list[dict[str, Any]],
                tolerances: dict[str, float]) -> str | None:
    """Whether the answer existed before a Triton kernel produced it (the work judged by value,
    not by the names of the operators that did it): a launch argument that neither the inputs
    nor an earlier launch gave its values (attribution.Held) already equals an output within the
    output's tolerance; or, where nothing recorded computed it (a thread, NumPy, Python
    arithmetic, PyTorch with the recorder switched off), is an affine image of one. The kernel
    that reads it then only passes the answer on, however much it changes its bits."""
    import torch

    for i, ref in enumerate(expected):
        if not isinstance(ref, torch.Tensor) or not ref.is_floating_point() or ref.numel() < 2:
            continue
        r = ref.reshape(-1).double()
        if not bool(torch.isfinite(r).all()):
            r = torch.where(torch.isfinite(r), r, torch.zeros_like(r))
        tol = tolerances.get(str(ref.dtype).removeprefix("torch."), tolerances["float32"])
        where = f"output {i}" if len(expected) > 1 else "the output"
        for tensor, info in zip(held, meta, strict=False):
            if tensor.numel() != r.numel():
                continue
            h = tensor.reshape(-1).double()
            h = torch.where(torch.isfinite(h), h, torch.zeros_like(h))
            source = str(info.get("source") or "outside")
            unseen = source == "outside"
            how = (f"computed by {source} (judged by its values, whatever the operator is called)" if not unseen else
                   "computed where the recorder cannot see (a thread, NumPy, Python arithmetic on the data, or "
                   "PyTorch with the recorder switched off)")
            argument = f"argument {int(info['argument']) + 1} of {info['kernel']} (launch {int(info['launch']) + 1})"
            if torch.allclose(h, r, atol=tol, rtol=tol):
                return (f"the answer existed before a Triton kernel produced it: {argument} already held {where} "
                        f"(within atol=rtol={tol:g}), {how}; the kernel only passes it on "
                        "(exploit 1: other code does the work, a kernel nudges the result)")
            if unseen and float(h.std()) > 0 and float(r.std()) > 0:
                correlation = float(torch.corrcoef(torch.stack([h, r]))[0, 1])
                if abs(correlation) >= AFFINE_CORRELATION:
                    return (f"the answer existed before a Triton kernel produced it: {argument} already held {where} "
                            f"up to a scale and shift (correlation {correlation:+.5f}), {how}; the kernel only "
                            "undoes the transform (exploit 1: other code does the work, a kernel nudges the result)")
    return None
