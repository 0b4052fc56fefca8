"""One typed settings object, read from every place a setting can come from.

Precedence (DESIGN.md, "Settings"): command-line flags > editor settings > `[tool.tritonsmith]`
in `pyproject.toml` > defaults. Each source is a plain mapping with camelCase (editor) or
snake_case / kebab-case (pyproject, flags) keys; `Settings.merged` folds them in order. A bad
value is reported once as a warning and falls back to the value below it, so one typo never
stops the linter.

The VS Code extension's `package.json` contributes exactly these settings (`tritonsmith.*`,
camelCase); a test keeps the two in sync.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .version import parse_version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Settings", "find_workspace_root", "read_pyproject", "settings_from"]


@dataclass(frozen=True)
class Settings:
    """Everything a user can configure. Field docs are the settings' descriptions."""

    triton_version: str | None = None
    """Triton version the rules are checked against (MAJOR.MINOR); default: the installed one."""

    select: tuple[str, ...] = ()
    """Rule codes, code prefixes or names to check; empty means all rules."""

    ignore: tuple[str, ...] = ()
    """Rule codes, code prefixes or names never to report."""

    rule_packs: tuple[str, ...] = ()
    """Extra rule-pack files or folders (relative to the workspace root)."""

    targets: tuple[str, ...] = ("sm_90",)
    """GPU targets to compile for on save (e.g. sm_80, sm_90, gfx942); a learned rule for some targets only fires for these."""

    import_paths: tuple[str, ...] = ()
    """Folders the verification workers import the file's own modules from (relative to the workspace root, e.g. src), besides the packages installed in the interpreter; the sandbox lets workers read them."""

    verify_on_save: str = "verify"
    """What a save does: off, compile (for the targets) or verify (compile, then check each spec in the file, a KernelBench problem or a harnessed launcher, against its reference; timed on a GPU)."""

    verify_after_autosave: int = 5
    """Seconds without an edit after an automatic save (files.autoSave) before the file is verified; an explicit save verifies at once, an autosave compiles only; 0: verify on explicit saves only."""

    compile_while_typing_ms: int = 500
    """After this many milliseconds without an edit, the compiler's frontend checks the kernels edited since their last compile (for the first target) in the unsaved text, so compiler errors stay current while typing; 0: compile on save only."""

    log_level: str = "info"
    """How much the language server logs to its output: error, warning, info (one line per compile, verification and search) or debug."""

    device: str = "auto"
    """Where to run kernels: auto, cuda or cpu (the Triton interpreter)."""

    torch_ops: str = "auto"
    """PyTorch compute a verified candidate may do on its inputs: auto (none when the task is a single operator, such as a KernelBench level-1 problem; any for a fusion task, reported with its share), none, any, or a comma-separated list of operators (e.g. convolution, addmm)."""

    proposer: str = "auto"
    """Who proposes kernel variants during a search: auto (a model when a key or endpoint is set and the workspace consented, else offline), offline, anthropic or openai."""

    model: str = "claude-sonnet-4-6"
    """The LLM model a search uses (Anthropic's, or the OpenAI-compatible server's)."""

    base_url: str = ""
    """An OpenAI-compatible endpoint for the openai proposer, e.g. http://localhost:8000/v1 (vLLM, Ollama)."""

    budget: int = 100
    """The number of candidate kernels a search may evaluate."""

    patience: int = 15
    """A search stops once this many candidates in a row found nothing faster than the best so far (a plateau); 0: it runs its whole budget."""

    objective: str = "auto"
    """What a search without a GPU ranks and claims by: auto or predicted (the predicted time on the GPU modelled for the first target, e.g. H100 SXM for sm_90, RTX A6000 for sm_86, from the compiler's report and a profiled run under the interpreter, a model estimate), or interpreter (interpreter time). With a GPU a search always measures GPU time."""

    verify_timeout: int | None = None
    """Seconds one forward pass may run during verification before the kernel is reported as hung (an endless loop); default: max(30, 20 times the reference's own forward pass)."""

    memory_limit_mb: int | None = None
    """Memory limit of each evaluator worker, in MB; a kernel that crosses it is stopped with a memory-limit verdict. Default: a quarter of the machine's available memory (1 to 32 GB)."""

    max_message_mb: int = 64
    """The largest message the language server reads from the editor, in MB; a larger one is answered with an error and skipped."""

    inlay_hints: bool = False
    """Show each assignment's inferred type and shape inside kernels as an inlay hint (e.g. `: fp32[BLOCK_M=64, BLOCK_N=128]`), for the first launch site or Config."""

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def import_folders(self, root: Path) -> list[Path]:
        """`import_paths` as absolute folders (relative ones under the workspace `root`)."""
        return [(root / p).resolve() for p in self.import_paths]

    def parsed_version(self) -> tuple[int, int] | None:
        return parse_version(self.triton_version) if self.triton_version else None

    @classmethod
    def merged(
        cls, *sources: Mapping[str, Any] | None, warnings: list[str] | None = None
    ) -> Settings:
        """Fold sources from lowest to highest precedence onto the defaults."""
        settings = cls()
        for source in sources:
            if source:
                settings = settings.updated(source, warnings=warnings)
        return settings

    def updated(self, values: Mapping[str, Any], *, warnings: list[str] | None = None) -> Settings:
        """A copy with `values` applied; unknown keys and bad values become warnings."""
        changes: dict[str, Any] = {}
        for raw_key, value in values.items():
            key = _snake(raw_key)
            if key in CLIENT_ONLY:
                continue
            if key not in _FIELDS:
                if warnings is not None:
                    warnings.append(f"unknown tritonsmith setting '{raw_key}' is ignored")
                continue
            if value is None:
                continue
            try:
                changes[key] = _coerce(key, value)
            except ConfigError as error:
                if warnings is not None:
                    warnings.append(str(error))
        return replace(self, **changes)


_FIELDS = {f.name: f for f in fields(Settings)}
# Editor settings in the `tritonsmith` section that configure the client, not the server
# (VS Code's extension reads `interpreter`; `trace.server` is vscode-languageclient's own).
CLIENT_ONLY = frozenset({"interpreter", "trace"})
SAVE_MODES = ("off", "compile", "verify")
LOG_LEVELS = ("error", "warning", "info", "debug")
PROPOSERS = ("auto", "offline", "anthropic", "openai")
OBJECTIVES = ("auto", "predicted", "interpreter")
_TUPLES = {"select", "ignore", "rule_packs", "targets", "import_paths"}
_POSITIVE_INTS = {"budget": "budget", "verify_timeout": "verifyTimeout", "memory_limit_mb": "memoryLimitMb",
                  "max_message_mb": "maxMessageMb"}


def _snake(key: str) -> str:
    out = []
    for char in key.replace("-", "_"):
        if char.isupper():
            out.append("_" + char.lower())
        else:
            out.append(char)
    return "".join(out).lstrip("_")


def _coerce(key: str, value: Any) -> Any:
    if key in _TUPLES:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"setting '{key}' must be a list of strings, got {value!r}")
        return tuple(value)
    if key == "triton_version":
        if value == "":
            return None
        if not isinstance(value, str):
            value = str(value)
        try:
            parse_version(value)
        except ValueError as error:
            raise ConfigError(f"setting 'tritonVersion': {error}") from None
        return value
    if key == "verify_on_save":
        if isinstance(value, bool):  # the first releases had a boolean
            return "verify" if value else "off"
        if value not in SAVE_MODES:
            raise ConfigError(f"setting 'verifyOnSave' must be off, compile or verify, got {value!r}")
        return value
    if key in _POSITIVE_INTS:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"setting '{_POSITIVE_INTS[key]}' must be a positive whole number, got {value!r}")
        return value
    if key == "patience":
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"setting 'patience' must be a whole number of candidates (0: no plateau stop), got {value!r}")
        return value
    if key == "verify_after_autosave":
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"setting 'verifyAfterAutosave' must be a whole number of seconds, got {value!r}")
        return value
    if key == "compile_while_typing_ms":
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"setting 'compileWhileTypingMs' must be a whole number of milliseconds, got {value!r}")
        return value
    if key == "inlay_hints":
        if not isinstance(value, bool):
            raise ConfigError(f"setting 'inlayHints' must be true or false, got {value!r}")
        return value
    if key == "log_level" and value not in LOG_LEVELS:
        raise ConfigError(f"setting 'logLevel' must be one of {', '.join(LOG_LEVELS)}, got {value!r}")
    if key == "device" and value not in ("auto", "cuda", "cpu"):
        raise ConfigError(f"setting 'device' must be auto, cuda or cpu, got {value!r}")
    if key == "objective" and value not in OBJECTIVES:
        raise ConfigError(f"setting 'objective' must be one of {', '.join(OBJECTIVES)}, got {value!r}")
    if key == "proposer" and value not in PROPOSERS:
        raise ConfigError(f"setting 'proposer' must be one of {', '.join(PROPOSERS)}, got {value!r}")
    if not isinstance(value, str):
        raise ConfigError(f"setting '{key}' must be a string, got {value!r}")
    return value


def settings_from(value: Any) -> dict:
    """The tritonsmith settings in initialization options or a configuration payload, which
    clients shape as {"settings": {...}}, {"tritonsmith": {...}} or the section itself."""
    if not isinstance(value, dict):
        return {}
    for key in ("tritonsmith", "settings"):
        inner = value.get(key)
        if isinstance(inner, dict):
            return settings_from(inner) if key == "settings" and "tritonsmith" in inner else inner
    return value


def find_workspace_root(start: Path) -> Path:
    """The nearest folder at or above `start` with a pyproject.toml, .tritonsmith or .git."""
    start = start.resolve()
    folder = start if start.is_dir() else start.parent
    for candidate in [folder, *folder.parents]:
        if any((candidate / marker).exists() for marker in ("pyproject.toml", ".tritonsmith", ".git")):
            return candidate
    return folder


def read_pyproject(root: Path, *, warnings: list[str] | None = None) -> dict[str, Any]:
    """`[tool.tritonsmith]` of `root/pyproject.toml`, or {} (a broken file is a warning)."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        if warnings is not None:
            warnings.append(f"{path}: cannot read [tool.tritonsmith]: {error}")
        return {}
    section = data.get("tool", {}).get("tritonsmith", {})
    if not isinstance(section, dict):
        if warnings is not None:
            warnings.append(f"{path}: [tool.tritonsmith] must be a table")
        return {}
    return section

