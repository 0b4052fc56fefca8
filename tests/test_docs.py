"""The docs name only what exists: every design section the code cites, every link, every file
path, and every custom LSP method or command they mention."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
CITING = ("tritonsmith", "client-vscode/src", "bench", "scripts", "tests", "pyproject.toml")


@cache
def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if (ROOT / line).exists()]


def _sources() -> list[Path]:
    return [ROOT / p for p in _tracked()
            if p.startswith(CITING) and p.endswith((".py", ".ts", ".toml", ".sh", ".mjs")) and p != "tests/test_docs.py"]


def test_every_cited_design_section_exists():
    headings = set(re.findall(r"(?m)^## (.+)$", (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8")))
    missing = []
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"DESIGN\.md(?:, | \()\"([^\"]+)\"", text):
            if match.group(1) not in headings:
                missing.append(f"{path.relative_to(ROOT)}: {match.group(1)!r}")
        bare = len(re.findall(r"DESIGN\.md", text)) - len(re.findall(r"DESIGN\.md(?:, | \()\"", text))
        if bare:
            missing.append(f"{path.relative_to(ROOT)}: cites DESIGN.md without naming a section")
    assert missing == []


def test_every_relative_link_in_the_docs_resolves():
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:") or target == "...":
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []


FILE_NAME = re.compile(r"`([\w./-]+\.(?:py|md|ts|sh|mjs|toml|json))`")
NOT_OURS = {  # named in the docs, deliberately not in the repository
    "reference.py",  # a user's reference file (DESIGN.md, "Kernel specs")
    "timings.json", "timings.md",  # what the GPU script writes on the lent machine
    "fla/modules/backends/triton_ascend/causal_conv1d.py",  # fetched real code, never committed
    "src/liger_kernel/ops/backends/_ascend/ops/fused_neighborhood_attention.py",
    "fla/modules/activations.py",
}


def test_every_file_the_docs_name_exists():
    """A path (`server/framing.py`, `scripts/test.sh`) must be the end of a file's path in the
    repository; a bare name (`framing.py`) must be some file's name. Files the project writes
    (`.tritonsmith/...`), examples of user files and raw data to come are named as such."""
    files = _tracked()
    names = {Path(f).name for f in files}
    unknown = []
    for page in PAGES:
        for name in set(FILE_NAME.findall(page.read_text(encoding="utf-8"))):
            name = name.removeprefix("./")
            if name.startswith(".tritonsmith/") or name in NOT_OURS:
                continue
            found = any(f == name or f.endswith("/" + name) for f in files) if "/" in name else name in names
            if not found:
                unknown.append(f"{page.relative_to(ROOT)}: {name}")
    assert unknown == []


def test_every_custom_method_and_command_the_docs_name_exists():
    code = "\n".join(p.read_text(encoding="utf-8") for p in _sources() if p.suffix in (".py", ".ts"))
    absent = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for name in set(re.findall(r"`(tritonsmith\.server\.\w+|tritonsmith/\w+)`", text)):
            if (ROOT / name).is_dir():  # a package, `tritonsmith/server`
                continue
            if f'"{name}"' not in code and f"'{name}'" not in code:
                absent.append(f"{page.relative_to(ROOT)}: {name}")
    assert absent == []
