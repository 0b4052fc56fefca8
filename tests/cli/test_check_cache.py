"""`tritonsmith check`'s result cache (check_cache.py): a cached answer is the fresh check's,
whatever was edited; it follows the settings, the rules and the tool; a cache it did not write
is never read; a broken or unwritable one costs a check, nothing else."""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
import time
from pathlib import Path

import pytest

from tritonsmith import check_cache
from tritonsmith.check_cache import CheckCache
from tritonsmith.cli import main
from tritonsmith.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [*sorted((ROOT / "examples" / "mistakes").glob("*.py")), ROOT / "examples" / "softmax.py",
           ROOT / "tests" / "fixtures" / "do_not_flag" / "matmul_autotune.py"]


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "kernels").mkdir()
    for source in SOURCES:
        shutil.copy(source, tmp_path / "kernels" / source.name.replace(".py", f"_{source.parent.name}.py"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def checks(monkeypatch) -> list[int]:
    """How many files were checked for real (not answered by the cache)."""
    calls: list[int] = []
    original = Workspace.check_source

    def counted(self, source, **kwargs):
        calls.append(1)
        return original(self, source, **kwargs)

    monkeypatch.setattr(Workspace, "check_source", counted)
    return calls


def _check(capsys, *flags: str) -> str:
    main(["check", "kernels", "--format", "json", "--exit-zero", *flags])
    return capsys.readouterr().out


def _edit(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    row = rng.randrange(len(lines))
    kind = rng.choice(["delete", "duplicate", "swap", "typo", "digit", "indent"])
    if kind == "delete":
        del lines[row]
    elif kind == "duplicate":
        lines.insert(row, lines[row])
    elif kind == "swap":
        other = rng.randrange(len(lines))
        lines[row], lines[other] = lines[other], lines[row]
    elif kind == "typo" and lines[row]:
        at = rng.randrange(len(lines[row]) + 1)
        lines[row] = lines[row][:at] + rng.choice("x(:,.0 ") + lines[row][at:]
    elif kind == "digit":
        lines[row] = "".join(str(rng.randrange(10)) if c.isdigit() and rng.random() < 0.5 else c for c in lines[row])
    else:
        lines[row] = "    " + lines[row]
    return "\n".join(lines)


def test_cached_findings_are_the_fresh_checks_over_random_edits(project: Path, capsys, checks: list[int]):
    """Forty rounds of random edits (some put an earlier text back, which the cache answers):
    each round's cached run prints what `--no-cache` prints, checking only the edited file."""
    rng = random.Random(20261206)
    files = sorted((project / "kernels").glob("*.py"))
    history: dict[Path, list[str]] = {f: [f.read_text()] for f in files}
    assert _check(capsys) == _check(capsys, "--no-cache")
    checks.clear()
    assert _check(capsys) and not checks  # everything answered from the cache
    answered_old = 0
    for round_ in range(40):
        path = rng.choice(files)
        if round_ % 4 == 3 and len(history[path]) > 1:
            text = rng.choice(history[path][:-1])  # an earlier text: its findings are stored
            answered_old += 1
        else:
            text = _edit(path.read_text(), rng)
        path.write_text(text)
        history[path].append(text)
        checks.clear()
        cached = _check(capsys)
        assert len(checks) <= 1, round_  # the edited file at most
        assert cached == _check(capsys, "--no-cache"), (round_, path.name)
    assert answered_old >= 5


def test_the_cache_follows_settings_rules_and_the_tool(project: Path, capsys, checks: list[int], monkeypatch):
    everything = _check(capsys)
    only = _check(capsys, "--select", "TS1")
    assert only != everything and only == _check(capsys, "--select", "TS1", "--no-cache")
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "\n[tool.tritonsmith]\nignore = ['TS1']\n")
    assert _check(capsys) == _check(capsys, "--no-cache") != everything
    pyproject.write_text("[project]\nname = 'demo'\n")
    checks.clear()
    assert _check(capsys) == everything and not checks  # back to the first settings: their entries
    # A workspace pack (learned rules live in such packs): another run key.
    (project / ".tritonsmith").mkdir(exist_ok=True)
    builtin = (ROOT / "tritonsmith" / "packs" / "a_shapes.toml").read_text()
    first = builtin[builtin.index("[[rules]]"):builtin.index("[[rules]]", builtin.index("[[rules]]") + 1)]
    (project / ".tritonsmith" / "extra.toml").write_text(
        "format = 1\n" + first.replace('"TS101"', '"TSA9101"').replace('"arange-non-power-of-two"', '"copy"'))
    checks.clear()
    with_pack = _check(capsys)
    assert checks and with_pack == _check(capsys, "--no-cache")
    # Another build of the tool (a development checkout's edited check): nothing is reused.
    monkeypatch.setattr(check_cache, "_build_id", "another build")
    checks.clear()
    assert _check(capsys) == with_pack and len(checks) == len(list((project / "kernels").glob("*.py")))


def test_a_cache_written_elsewhere_or_broken_is_never_believed(project: Path, capsys, checks: list[int],
                                                                monkeypatch):
    """The threat: a cache folder arrives with the workspace (committed, copied, tampered with)
    holding "no findings" for a file that has some. Another user's key makes other run keys, so
    its entries are never looked up; an entry that is not the format is a miss, checked again,
    and so is every entry of a batch that is not."""
    fresh = _check(capsys, "--no-cache")
    assert json.loads(fresh)
    _check(capsys)
    folder = project / ".tritonsmith" / "cache" / "check"
    [run] = folder.iterdir()
    for batch in run.glob("*.json"):
        data = json.loads(batch.read_text())
        batch.write_text(json.dumps({"entries": {digest: [] for digest in data["entries"]}}))  # no findings anywhere
    monkeypatch.setattr("tritonsmith.keys.user_key", lambda name: b"another user's key" * 2)
    checks.clear()
    assert _check(capsys) == fresh and checks  # another key: the tampered folder is not this run's
    [mine] = [p for p in folder.iterdir() if p != run]
    [batch] = mine.glob("*.json")
    data = json.loads(batch.read_text())
    digests = sorted(data["entries"])
    data["entries"][digests[0]] = "not a list of findings"
    data["entries"][digests[1]] = [["TS101"]]
    data["entries"][digests[2]] = [[1, 2, 3, 4, 5, 6, 7, 8]]
    batch.write_text(json.dumps(data))
    checks.clear()
    assert _check(capsys) == fresh and len(checks) == 3
    for written in mine.glob("*.json"):
        written.write_bytes(b"not json")  # every batch broken: every file checked again
    checks.clear()
    assert _check(capsys) == fresh and len(checks) == len(list((project / "kernels").glob("*.py")))


def test_no_cache_writes_nothing_and_a_folder_that_cannot_be_made_is_no_cache(project: Path, capsys):
    fresh = _check(capsys, "--no-cache")
    assert not (project / ".tritonsmith").exists()
    (project / ".tritonsmith").mkdir()
    (project / ".tritonsmith" / "cache").write_text("a file where the folder would go")
    assert _check(capsys) == fresh == _check(capsys)
    assert (project / ".tritonsmith" / "cache").is_file()


def test_prune_keeps_the_newest_runs_and_entries(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(check_cache, "KEEP_ENTRIES_MIN", 10)
    folder = tmp_path / "check"
    old = time.time() - 3600
    runs = [f"{index:032x}" for index in range(12)]  # other run keys, written an hour ago and before
    for index, name in enumerate(runs):
        run = folder / name
        run.mkdir(parents=True)
        os.utime(run, (old - index, old - index))
    stale = folder / ("e" * 32)
    stale.mkdir()
    os.utime(stale, (old - check_cache.STALE_RUN_S, old - check_cache.STALE_RUN_S))
    mine = folder / "not a run key"  # someone else's folder: never pruned
    mine.mkdir()
    os.utime(mine, (0, 0))
    for run_index in range(6):  # six earlier runs of five files each, older first
        cache = CheckCache(folder, "f" * 32)
        for index in range(5 * run_index, 5 * run_index + 5):
            cache.put(f"source {index}".encode(), [])
        cache.flush()
        [batch] = [p for p in cache.folder.glob("*.json") if os.stat(p).st_mtime > old + 1000]
        os.utime(batch, (old + run_index, old + run_index))
    (cache.folder / "notes.json").write_text("{}")  # not a batch's name: left alone
    cache = CheckCache(folder, "f" * 32)
    assert cache.get(b"source 0") == []
    cache.prune(checked=2)  # 30 entries, 10 kept: the newest runs'
    kept = sorted(p.name for p in folder.iterdir())
    assert "f" * 32 in kept and "e" * 32 not in kept
    assert kept == sorted(["f" * 32, "not a run key", *runs[:check_cache.KEEP_RUNS - 1]])
    again = CheckCache(folder, "f" * 32)
    assert again.get(b"source 29") == [] and again.get(b"source 20") == [] and again.get(b"source 19") is None
    assert len([p for p in again.folder.glob("*.json") if p.name != "notes.json"]) == 1
    assert (again.folder / "notes.json").exists()
    assert (tmp_path / ".gitignore").read_text().strip().endswith("*")


def test_batches_are_merged_once_there_are_many(tmp_path: Path):
    folder = tmp_path / "check"
    for index in range(check_cache.MERGE_BATCHES + 2):
        cache = CheckCache(folder, "a" * 32)
        cache.put(f"source {index}".encode(), [])
        cache.prune(checked=1)
        assert len(list(cache.folder.glob("*.json"))) <= check_cache.MERGE_BATCHES
    fresh = CheckCache(folder, "a" * 32)
    assert all(fresh.get(f"source {index}".encode()) == [] for index in range(check_cache.MERGE_BATCHES + 2))


def test_a_cache_folder_that_is_a_link_is_never_followed(project: Path, capsys, tmp_path_factory):
    """The threat: a repository ships `.tritonsmith/cache/check` (or `cache`) as a symbolic link to
    somewhere else (the home folder): writing entries there, or pruning "old run folders" there,
    would touch what is not the cache's. A linked folder means no cache: nothing written, nothing
    removed, the findings those of a fresh check."""
    fresh = _check(capsys, "--no-cache")
    elsewhere = tmp_path_factory.mktemp("home")
    for index in range(12):
        (elsewhere / f"{index:032x}").mkdir()  # looks like run keys, and is old
        os.utime(elsewhere / f"{index:032x}", (0, 0))
    (project / ".tritonsmith" / "cache").mkdir(parents=True)
    for link in (project / ".tritonsmith" / "cache" / "check", project / ".tritonsmith" / "cache"):
        if link.is_dir() and not link.is_symlink():
            link.rmdir()
        link.symlink_to(elsewhere, target_is_directory=True)
        assert _check(capsys) == fresh == _check(capsys)
        assert sorted(p.name for p in elsewhere.iterdir()) == [f"{index:032x}" for index in range(12)]
        link.unlink()
        (project / ".tritonsmith" / "cache").mkdir(exist_ok=True)


def test_concurrent_writers_leave_whole_entries(tmp_path: Path):
    from tritonsmith.rules import Finding, Severity, Span

    finding = Finding("TS101", "name", Severity.ERROR, "message " * 200, Span((1, 2), (1, 9), 10, 17))
    folder = tmp_path / "check"
    seen: list[object] = []

    def work() -> None:  # a run each time: its own cache, as another process would have
        for index in range(40):
            cache = CheckCache(folder, "a" * 32)
            cache.put(b"the same file", [finding] * 20)
            cache.put(f"file {index}".encode(), [])
            cache.prune(checked=2)
            seen.append(CheckCache(folder, "a" * 32).get(b"the same file"))

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 240 and all(found == [finding] * 20 for found in seen)
    names = [p.name for p in (folder / ("a" * 32)).iterdir()]
    assert names and all(check_cache._BATCH_NAME.fullmatch(name) for name in names)  # no half-written file


def test_fix_rewrites_a_file_whose_findings_came_from_the_cache(project: Path, capsys):
    bad = project / "kernels" / "bad.py"
    bad.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                   "def scale_kernel(x_ptr, n, BLOCK):\n    offs = tl.arange(0, BLOCK)\n"
                   "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)\n")
    assert "TS" in _check(capsys)  # stored, with its fix
    before = bad.read_text()
    main(["check", "kernels", "--fix", "--exit-zero"])
    capsys.readouterr()
    assert bad.read_text() != before and "BLOCK: tl.constexpr" in bad.read_text()
    assert _check(capsys) == _check(capsys, "--no-cache")


def test_a_folder_named_like_a_batch_costs_nothing(tmp_path: Path):
    folder = tmp_path / "check"
    cache = CheckCache(folder, "a" * 32)
    cache.put(b"source", [])
    cache.flush()
    (cache.folder / ("b" * 40 + ".json")).mkdir()  # not a batch, though named like one
    for index in range(check_cache.MERGE_BATCHES):
        more = CheckCache(folder, "a" * 32)
        more.put(f"source {index}".encode(), [])
        more.prune(checked=1)  # merges, and cannot remove the folder
    assert CheckCache(folder, "a" * 32).get(b"source") == []
