"""The typed settings: precedence, coercion, and bad values that warn and fall back."""

from __future__ import annotations

from tritonsmith.settings import Settings


def test_precedence_later_sources_win():
    settings = Settings.merged({"select": ["TS1"], "triton-version": "3.6"}, {"tritonVersion": "3.9"})
    assert settings.select == ("TS1",) and settings.triton_version == "3.9"


def test_bad_values_warn_and_fall_back():
    warnings: list[str] = []
    settings = Settings.merged({"tritonVersion": "3.6"}, {"tritonVersion": "three", "budget": -1}, warnings=warnings)
    assert settings.triton_version == "3.6" and settings.budget == 100
    assert any("tritonVersion" in w for w in warnings) and any("budget" in w for w in warnings)


def test_unknown_keys_warn_but_client_only_settings_are_silent():
    warnings: list[str] = []
    Settings.merged({"interpreter": "/usr/bin/python3", "trace": {"server": "off"}, "bogus": 1}, warnings=warnings)
    assert warnings == ["unknown tritonsmith setting 'bogus' is ignored"]


def test_comma_separated_lists():
    assert Settings.merged({"ignore": "TS101, TS102"}).ignore == ("TS101", "TS102")


def test_log_level_and_the_autosave_delay():
    warnings: list[str] = []
    settings = Settings.merged({"logLevel": "debug", "verifyAfterAutosave": 0})
    assert (settings.log_level, settings.verify_after_autosave) == ("debug", 0)
    settings = Settings.merged({"logLevel": "loud", "verifyAfterAutosave": -2}, warnings=warnings)
    assert (settings.log_level, settings.verify_after_autosave) == ("info", 5)
    assert any("logLevel" in w for w in warnings) and any("verifyAfterAutosave" in w for w in warnings)
