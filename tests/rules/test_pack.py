"""Rule packs: loading, errors that name file and line, overrides, round trips and imports."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tritonsmith.errors import RulePackError
from tritonsmith.rules import Severity, import_adaexplore, load_pack, load_rules, pack_paths
from tritonsmith.rules.pack import BUILTIN_DIR, FORMAT_VERSION, dump_pack, write_pack_atomic

RULE = """
[[rules]]
code = "{code}"
name = "{name}"
title = "a title"
statement = "You cannot do this."
severity = "{severity}"
category = "A"
"""


def pack(tmp_path: Path, name: str, body: str, header: str = "format = 1\n") -> Path:
    path = tmp_path / name
    path.write_text(header + textwrap.dedent(body), encoding="utf-8")
    return path


def rule(code: str = "TS901", name: str = "a-rule", severity: str = "warning") -> str:
    return RULE.format(code=code, name=name, severity=severity)


def error_of(path: Path) -> RulePackError:
    with pytest.raises(RulePackError) as info:
        load_pack(path)
    error = info.value
    assert error.path == str(path)
    assert str(path) in error.user_message
    return error


# -- a good pack --------------------------------------------------------------------------


def test_load_a_small_pack(tmp_path):
    path = pack(tmp_path, "a.toml", rule("TS901", "first") + rule("TSL1", "second", "hint"))
    rules = load_pack(path)
    assert [(r.code, r.name, r.severity) for r in rules] == [
        ("TS901", "first", Severity.WARNING), ("TSL1", "second", Severity.HINT),
    ]
    assert rules[0].source == str(path)
    assert [r.source_line for r in rules] == [3, 11]  # the [[rules]] header lines


def test_builtin_pack_loads_without_errors():
    ruleset = load_rules(pack_paths(None, include_user=False))
    assert not ruleset.errors, [e.user_message for e in ruleset.errors]
    assert ruleset.get("TS101").name == "arange-non-power-of-two"
    assert ruleset.get("arange-non-power-of-two").code == "TS101"
    assert ruleset.get("nope") is None


# -- malformed packs ----------------------------------------------------------------------


def test_invalid_toml_names_file_and_line(tmp_path):
    path = pack(tmp_path, "broken.toml", rule() + 'title = "unterminated\n')
    error = error_of(path)
    assert error.line == 10
    assert f"{path}:10:" in error.user_message
    assert "invalid TOML" in error.problem


def test_a_malformed_pack_does_not_stop_the_others(tmp_path):
    good_before = pack(tmp_path, "1.toml", rule("TS901", "one"))
    broken = pack(tmp_path, "2.toml", rule("TS902", "two") + "this is = = not toml\n")
    bad_rule = pack(tmp_path, "3.toml", rule("TS90", "three"))
    good_after = pack(tmp_path, "4.toml", rule("TS904", "four"))
    ruleset = load_rules([good_before, broken, bad_rule, good_after])
    assert [r.code for r in ruleset] == ["TS901", "TS904"]
    assert [e.path for e in ruleset.errors] == [str(broken), str(bad_rule)]
    assert ruleset.errors[0].line == 10
    assert ruleset.errors[1].line == 3


def test_missing_file_is_an_error_not_a_crash(tmp_path):
    ruleset = load_rules([tmp_path / "missing.toml", pack(tmp_path, "ok.toml", rule())])
    assert [r.code for r in ruleset] == ["TS901"]
    assert len(ruleset.errors) == 1 and "cannot read" in ruleset.errors[0].problem


def test_non_utf8_pack(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'format = 1\n# caf\xe9\n')
    assert "UTF-8" in error_of(path).problem


def test_missing_required_field(tmp_path):
    body = rule("TS901", "first") + rule("TS902", "second").replace('title = "a title"\n', "")
    error = error_of(pack(tmp_path, "p.toml", body))
    assert error.line == 11
    assert "TS902" in error.problem and "'title'" in error.problem


@pytest.mark.parametrize("code", ["TS1", "TS1234", "XX101", "ts101", "TSA", "TSLx"])
def test_bad_code(tmp_path, code):
    error = error_of(pack(tmp_path, "p.toml", rule(code)))
    assert error.line == 3
    assert "bad rule code" in error.problem and repr(code) in error.problem


def test_bad_name_and_severity(tmp_path):
    assert "kebab-case" in error_of(pack(tmp_path, "n.toml", rule(name="Not_Kebab"))).problem
    error = error_of(pack(tmp_path, "s.toml", rule(severity="fatal")))
    assert "bad severity 'fatal'" in error.problem and error.line == 3


def test_bad_regex_signature(tmp_path):
    body = rule() + 'signatures = ["fine", "unbalanced (paren"]\n'
    error = error_of(pack(tmp_path, "p.toml", body))
    assert error.line == 3
    assert "not a valid regex" in error.problem and "unbalanced (paren" in error.problem


def test_signatures_must_be_strings(tmp_path):
    error = error_of(pack(tmp_path, "p.toml", rule() + "signatures = [1, 2]\n"))
    assert "'signatures'" in error.problem


def test_unknown_field(tmp_path):
    body = rule("TS901", "first") + rule("TS902", "second") + 'severty = "error"\n'
    error = error_of(pack(tmp_path, "p.toml", body))
    assert error.line == 11
    assert "unknown field" in error.problem and "severty" in error.problem


def test_bad_version_range(tmp_path):
    error = error_of(pack(tmp_path, "p.toml", rule() + 'triton = ">=three"\n'))
    assert error.line == 3 and "TS901" in error.problem


def test_wrong_type_for_a_string_field(tmp_path):
    error = error_of(pack(tmp_path, "p.toml", rule().replace('category = "A"', "category = 3")))
    assert "'category'" in error.problem and "string" in error.problem


def test_negative_count(tmp_path):
    assert "'count'" in error_of(pack(tmp_path, "p.toml", rule() + "count = -1\n")).problem


def test_newer_format_version(tmp_path):
    path = pack(tmp_path, "p.toml", rule(), header=f"format = {FORMAT_VERSION + 1}\n")
    error = error_of(path)
    assert error.line == 1
    assert "newer" in error.problem and "upgrade" in error.problem


def test_rules_must_be_tables(tmp_path):
    error = error_of(pack(tmp_path, "p.toml", "rules = 3\n"))
    assert error.line == 1 and "[[rules]]" in error.problem


# -- overrides ----------------------------------------------------------------------------


def test_workspace_pack_overrides_a_builtin_rule(tmp_path):
    builtin = load_rules(pack_paths(None, include_user=False)).get("TS101")
    assert builtin.severity is Severity.ERROR
    local = tmp_path / ".tritonsmith"
    local.mkdir()
    override = builtin.__class__(**{**builtin.__dict__, "severity": Severity.HINT, "title": "mine"})
    (local / "team.toml").write_text(dump_pack([override]), encoding="utf-8")
    paths = pack_paths(tmp_path, include_user=False)
    assert paths[-1] == local / "team.toml"
    ruleset = load_rules(paths)
    assert not ruleset.errors
    assert ruleset.get("TS101").severity is Severity.HINT
    assert ruleset.get("TS101").title == "mine"
    assert ruleset.get("TS101").source == str(local / "team.toml")
    assert len([r for r in ruleset if r.code == "TS101"]) == 1
    assert len(ruleset) == len(load_rules(pack_paths(None, include_user=False)))


def test_extra_paths_are_loaded_last(tmp_path):
    extra = pack(tmp_path, "extra.toml", rule("TS101", "arange-non-power-of-two", "information"))
    ruleset = load_rules(pack_paths(None, [str(extra)], include_user=False))
    assert ruleset.get("TS101").severity is Severity.INFORMATION


# -- round trips --------------------------------------------------------------------------


def comparable(rules):
    return [{k: v for k, v in r.__dict__.items() if k not in ("source", "source_line")} for r in rules]


@pytest.mark.parametrize("path", sorted(BUILTIN_DIR.glob("*.toml")), ids=lambda p: p.name)
def test_dump_then_load_round_trips_builtin_rules(tmp_path, path):
    original = load_pack(path)
    out = tmp_path / "dumped.toml"
    out.write_text(dump_pack(original), encoding="utf-8")
    assert comparable(load_pack(out)) == comparable(original)


def test_round_trip_of_awkward_strings(tmp_path):
    builtin = load_rules(pack_paths(None, include_user=False)).get("TS101")
    awkward = builtin.__class__(**{
        **builtin.__dict__,
        "title": 'quotes " and \\ backslash\tand tab',
        "statement": "a '''triple''' quote\nand a newline",
        "good": "ends without newline\nx = '''",
        "signatures": ("a\\(b\\)", 'say "hi"'),
    })
    path = tmp_path / "awkward.toml"
    write_pack_atomic(path, [awkward])
    assert comparable(load_pack(path)) == comparable([awkward])
    assert [p.name for p in tmp_path.iterdir()] == ["awkward.toml"]  # no temp file left


# -- AdaExplore import --------------------------------------------------------------------


def test_import_adaexplore():
    memory = textwrap.dedent("""\
        # AdaExplore memory
        You cannot use Python lists inside a Triton kernel.||12

        You cannot call tl.arange with a non-power-of-two range||3
          You cannot break out of a loop inside @triton.jit
        You cannot use a || inside the text||7
    """)
    rules = import_adaexplore(memory, source="/tmp/memory.txt")
    assert [r.code for r in rules] == ["TSA001", "TSA002", "TSA003", "TSA004"]
    assert [r.count for r in rules] == [12, 3, 1, 7]
    assert [r.source_line for r in rules] == [2, 4, 5, 6]
    assert rules[0].statement == "You cannot use Python lists inside a Triton kernel."
    assert rules[0].title == "You cannot use Python lists inside a Triton kernel"
    assert rules[3].statement == "You cannot use a || inside the text"
    for imported in rules:
        assert imported.advisory
        assert imported.severity is Severity.INFORMATION
        assert imported.category == "imported"
        assert imported.check is None
        assert "memory.txt" in imported.provenance
        assert imported.valid_name(imported.name)
    assert rules[0].name == "use-python-lists-inside-triton-kernel"


def test_imported_rules_survive_a_pack_round_trip(tmp_path):
    rules = import_adaexplore("You cannot do X.||2\nYou cannot do Y.\n", source="m.txt", first_number=7)
    assert [r.code for r in rules] == ["TSA007", "TSA008"]
    path = tmp_path / "imported.toml"
    write_pack_atomic(path, rules)
    assert comparable(load_pack(path)) == comparable(rules)


def test_import_adaexplore_rejects_a_non_numeric_count():
    memory = "You cannot do X.||2\n\n# comment\nYou cannot do Y.||many\n"
    with pytest.raises(RulePackError) as info:
        import_adaexplore(memory, source="memory.txt")
    assert info.value.line == 4
    assert "memory.txt:4" in info.value.user_message and "'many'" in info.value.problem


def test_import_adaexplore_rejects_an_empty_rule():
    with pytest.raises(RulePackError) as info:
        import_adaexplore("ok||1\n   ||5\n", source="memory.txt")
    assert info.value.line == 2


def test_import_adaexplore_of_nothing():
    assert import_adaexplore("", source="m.txt") == []
    assert import_adaexplore("\n# only comments\n\n", source="m.txt") == []


def test_user_packs_load_from_the_user_data_directory(tmp_path, monkeypatch):
    """A pack in the platform's user data folder applies to every workspace."""
    import platformdirs

    from tritonsmith.rules.pack import user_rules_dir

    monkeypatch.setattr(platformdirs, "user_data_dir", lambda *a, **k: str(tmp_path / "data"))
    folder = user_rules_dir()
    assert folder == tmp_path / "data" / "rules"
    folder.mkdir(parents=True)
    builtin = load_rules(pack_paths(None, include_user=False))
    rule = builtin.get("TS109")
    from dataclasses import replace as _replace

    (folder / "mine.toml").write_text(dump_pack([_replace(rule, severity=Severity.HINT)]))
    paths = pack_paths(None)
    assert paths[-1] == folder / "mine.toml"
    assert load_rules(paths).get("TS109").severity is Severity.HINT


# -- format 2: learned rules, their lifecycle and provenance ---------------------------------


LEARNED = """
[[rules]]
code = "TSL001"
name = "not-defined"
title = "NameError: <name> is not defined"
statement = "You cannot use a name the kernel does not define."
severity = "warning"
category = "NameError"
signatures = ["is not defined"]
count = 4
status = "{status}"
reviewed = true
hold = "seen in 1 kernel; needs 2"
template = "NameError: <name> is not defined"
first_seen = "2026-01-02T03:04:05Z"
last_seen = "2026-01-03T03:04:05Z"
kernels = ["0123456789ab"]
failures = [1, 2, 7]
examples = ["NameError('z is not defined')", "line one\\nline two"]
"""


def test_learned_fields_load_and_round_trip(tmp_path):
    path = pack(tmp_path, "rules.toml", LEARNED.format(status="pending"), header="format = 2\n")
    [learned] = load_pack(path)
    assert (learned.status, learned.reviewed, learned.failures, learned.kernels) == (
        "pending", True, (1, 2, 7), ("0123456789ab",))
    assert learned.examples[1] == "line one\nline two" and learned.first_seen == "2026-01-02T03:04:05Z"
    out = tmp_path / "again.toml"
    write_pack_atomic(out, [learned], header="a comment\non two lines")
    text = out.read_text()
    assert text.startswith("# a comment\n# on two lines\nformat = 2\n")
    assert comparable(load_pack(out)) == comparable([learned])


def test_a_pack_without_learned_fields_is_still_written_as_format_1(tmp_path):
    builtin = load_pack(sorted(BUILTIN_DIR.glob("*.toml"))[0])
    assert dump_pack(builtin).startswith("format = 1\n")
    assert FORMAT_VERSION == 2


def test_only_active_rules_are_in_force(tmp_path):
    folder = tmp_path / ".tritonsmith"
    folder.mkdir()
    pack(folder, "rules.toml", LEARNED.format(status="pending") + rule("TS101", "arange-non-power-of-two")
         .replace('category = "A"', 'category = "A"\nstatus = "rejected"'), header="format = 2\n")
    ruleset = load_rules(pack_paths(tmp_path, include_user=False))
    assert not ruleset.errors
    assert ruleset.get("TSL001") is None  # pending: for review, not in force
    assert ruleset.get("TS101") is None  # a rejected override turns the builtin rule off
    assert ruleset.get("TS102") is not None
    [pending, rejected] = load_pack(folder / "rules.toml")
    assert not pending.matches_error("NameError('z is not defined')")
    assert rejected.status == "rejected"


@pytest.mark.parametrize(("field", "problem"), [
    ('status = "maybe"', "bad status 'maybe'"),
    ('failures = ["one"]', "'failures' of TS901 must be a list of failure ids"),
    ('kernels = "abc"', "'kernels' of TS901 must be a list of strings"),
    ('reviewed = "yes"', "'reviewed' of TS901 must be true or false"),
])
def test_bad_learned_fields_name_the_rule(tmp_path, field, problem):
    assert problem in error_of(pack(tmp_path, "p.toml", rule() + field + "\n")).problem


def test_a_malformed_learned_pack_is_reported_and_the_rest_still_loads(tmp_path):
    folder = tmp_path / ".tritonsmith"
    folder.mkdir()
    (folder / "rules.toml").write_text("format = 2\n[[rules]\ncode = \n", encoding="utf-8")
    ruleset = load_rules(pack_paths(tmp_path, include_user=False))
    [error] = ruleset.errors
    assert error.path == str(folder / "rules.toml") and error.line == 2
    assert f"{folder / 'rules.toml'}:2: invalid TOML" in error.user_message
    assert ruleset.get("TS101") is not None


def test_a_pack_edited_in_place_is_read_again(tmp_path):
    # Packs are parsed once per process and reused while their text is the same (pack.py).
    from tritonsmith.rules import load_pack

    pack = tmp_path / "team.toml"
    rule = '[[rules]]\ncode = "TS990"\nname = "no-foo"\ntitle = "t"\ncategory = "A"\nseverity = "{}"\nstatement = "s"\ncheck = "arange_pow2"\n'
    pack.write_text(rule.format("warning"))
    assert [r.severity.value for r in load_pack(pack)] == ["warning"]
    pack.write_text(rule.format("error"))
    assert [r.severity.value for r in load_pack(pack)] == ["error"]
