"""Compile rule examples with the installed Triton for sm_90 (no GPU needed) and report errors.

Run as a script in its own process (it imports triton, which the test process need not):

    python compile_examples.py EXAMPLES.json RESULTS.json

EXAMPLES.json is a list of {"code", "source"}; RESULTS.json gets, per example, the error text
of each kernel that failed to compile (the whole exception chain plus what native code wrote
to stderr) or null when everything compiled.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from tritonsmith.analysis import Document, index_module
from tritonsmith.analysis.values import UNKNOWN
from tritonsmith.rules.context import KernelContext

TARGET = GPUTarget("cuda", 90, 32)


def _error_text(error: BaseException) -> str:
    parts = []
    seen = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


def _signature(ctx: KernelContext) -> tuple[dict, dict, dict]:
    signature, constexprs, options = {}, {}, {}
    scenarios = list(reversed(ctx.scenarios()))  # launch sites and configs before defaults
    typed = ctx.param_types(scenarios[0]) if scenarios else {}  # what the launch site allocates
    for param in ctx.kernel.params:
        value = next((s.env[param.name] for s in scenarios if s.env.get(param.name, UNKNOWN) is not UNKNOWN), UNKNOWN)
        if param.is_constexpr:
            signature[param.name] = "constexpr"
            constexprs[param.name] = 64 if value is UNKNOWN else value
        elif param.name in typed:
            signature[param.name] = typed[param.name]
        elif param.name.endswith("ptr") or param.name.endswith("_ptrs"):
            signature[param.name] = "*fp32"
        elif isinstance(value, float):
            signature[param.name] = "fp32"
        else:
            signature[param.name] = "i32"
    for scenario in scenarios:
        if scenario.origin is None:
            continue
        for key in ("num_warps", "num_stages"):
            for site in ctx.kernel.launches:
                if site.node == scenario.origin and key in site.keywords:
                    options[key] = int(site.keywords[key][1].text)
            if ctx.kernel.autotune:
                for config in ctx.kernel.autotune.configs:
                    if config.node == scenario.origin and key in config.options:
                        options[key] = int(config.options[key].text)
    return signature, constexprs, options


def _compile_file(path: Path, source: str) -> str | None:
    document = Document(source)
    index = index_module(document.root)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # noqa: BLE001
        return _error_text(error)
    errors = []
    roots = [k for k in index.kernels if k.launches] or index.kernels
    for kernel in roots:
        ctx = KernelContext(kernel, index, document.source, None)
        fn = getattr(module, kernel.name)
        while not isinstance(fn, triton.runtime.JITFunction):  # autotune / heuristics wrappers
            fn = fn.fn
        signature, constexprs, options = _signature(ctx)
        stderr_copy = os.dup(2)
        with tempfile.TemporaryFile() as captured:
            os.dup2(captured.fileno(), 2)
            try:
                triton.compile(ASTSource(fn, signature, constexprs=constexprs), target=TARGET, options=options)
                failure = None
            except BaseException as error:  # noqa: BLE001
                failure = _error_text(error)
            finally:
                os.dup2(stderr_copy, 2)
                os.close(stderr_copy)
            captured.seek(0)
            native = captured.read().decode("utf-8", errors="replace")
        if failure is not None:
            errors.append(f"{kernel.name}: {failure}\n{native}")
    return "\n".join(errors) or None


def main() -> None:
    examples = json.loads(Path(sys.argv[1]).read_text())
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(scratch, "cache"))
        for number, example in enumerate(examples):
            path = Path(scratch) / f"example_{number}_{example['code']}.py"
            path.write_text(example["source"])
            try:
                results[example["code"]] = _compile_file(path, example["source"])
            except Exception:  # noqa: BLE001
                results[example["code"]] = "harness error:\n" + traceback.format_exc()
    Path(sys.argv[2]).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
