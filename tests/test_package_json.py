"""The VS Code extension's manifest (`package.json`) stays in sync with the server.

Its `tritonsmith.*` settings are exactly `Settings`' fields in camelCase (plus the client-only
`tritonsmith.interpreter`), with the same defaults, types and descriptions (the field docs); its
command ids never collide with the server's `tritonsmith.server.*`; it activates on Python files.
"""

from __future__ import annotations

import ast
import inspect
import json
import types
import typing
from dataclasses import fields
from pathlib import Path

import pytest

from tritonsmith.settings import OBJECTIVES, PROPOSERS, Settings

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))
PROPERTIES: dict[str, dict] = MANIFEST["contributes"]["configuration"]["properties"]
CLIENT_ONLY = {"tritonsmith.interpreter"}


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def field_docs() -> dict[str, str]:
    """Each Settings field's docstring (the string right after the field), from the source."""
    tree = ast.parse(inspect.getsource(Settings))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for node, after in zip(body, body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
        ):
            docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def json_types(annotation: object) -> set[str]:
    """The JSON schema types a Python annotation allows."""
    hints = {
        str: {"string"},
        bool: {"boolean"},
        int: {"integer"},
        type(None): {"null"},
    }
    origin = typing.get_origin(annotation)
    if origin is tuple:
        return {"array"}
    if origin in (typing.Union, types.UnionType):
        return set().union(*(json_types(arg) for arg in typing.get_args(annotation)))
    return hints[annotation]  # type: ignore[index]


HINTS = typing.get_type_hints(Settings)
SETTINGS = {f"tritonsmith.{camel(f.name)}": f for f in fields(Settings)}


def test_settings_are_exactly_the_server_settings():
    contributed = {key for key in PROPERTIES if key.startswith("tritonsmith.")} - CLIENT_ONLY
    assert contributed == set(SETTINGS)
    assert set(PROPERTIES) == contributed | CLIENT_ONLY


@pytest.mark.parametrize("key", sorted(SETTINGS))
def test_setting_matches_its_field(key: str):
    field = SETTINGS[key]
    schema = PROPERTIES[key]
    default = getattr(Settings(), field.name)
    expected_default = list(default) if isinstance(default, tuple) else default
    assert schema["default"] == expected_default
    declared = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    assert set(declared) == json_types(HINTS[field.name])
    if "array" in declared:
        assert schema["items"] == {"type": "string"}
    assert schema["description"] == field_docs()[field.name]
    assert schema.get("scope") == "resource"
    # The server accepts the default as the editor sends it, without a warning.
    warnings: list[str] = []
    assert (
        Settings().updated({key.split(".", 1)[1]: schema["default"]}, warnings=warnings)
        == Settings()
    )
    assert warnings == []


def test_enum_settings_list_exactly_the_values_the_server_accepts():
    assert PROPERTIES["tritonsmith.device"]["enum"] == ["auto", "cuda", "cpu"]
    assert PROPERTIES["tritonsmith.proposer"]["enum"] == list(PROPOSERS)
    assert PROPERTIES["tritonsmith.verifyOnSave"]["enum"] == ["off", "compile", "verify"]
    assert PROPERTIES["tritonsmith.objective"]["enum"] == list(OBJECTIVES)
    for key in ("tritonsmith.device", "tritonsmith.proposer", "tritonsmith.verifyOnSave", "tritonsmith.objective"):
        for value in PROPERTIES[key]["enum"]:
            warnings: list[str] = []
            Settings().updated({key.split(".", 1)[1]: value}, warnings=warnings)
            assert warnings == []
        bad: list[str] = []
        Settings().updated({key.split(".", 1)[1]: "nonsense"}, warnings=bad)
        assert bad, f"{key} accepts a value outside its enum"


def test_interpreter_is_a_client_only_string_setting():
    schema = PROPERTIES["tritonsmith.interpreter"]
    assert schema["type"] == "string"
    assert schema["default"] == ""
    assert "interpreter" not in {f.name for f in fields(Settings)}


def test_no_secret_is_a_setting():
    for key in PROPERTIES:
        assert not any(word in key.lower() for word in ("key", "token", "secret", "password")), key


def test_command_ids_never_collide_with_server_commands():
    ids = [command["command"] for command in MANIFEST["contributes"]["commands"]]
    assert ids, "the extension contributes commands"
    assert len(ids) == len(set(ids))
    for command_id in ids:
        assert command_id.startswith("tritonsmith."), command_id
        assert not command_id.startswith("tritonsmith.server."), command_id
    assert {"tritonsmith.restart", "tritonsmith.showOutput", "tritonsmith.openRuleDocs"} <= set(ids)


def test_activates_on_python_files():
    assert "onLanguage:python" in MANIFEST["activationEvents"]
    assert MANIFEST["main"] == "./dist/extension.js"
    assert MANIFEST["engines"]["vscode"].startswith("^1.")


def test_extension_version_is_the_package_version():
    from tritonsmith import __version__

    assert MANIFEST["version"] == __version__


def test_settings_are_listed_by_importance_not_alphabetically():
    """The Settings UI sorts by name unless each setting has an order: the interpreter and
    verification come first, the tuning knobs last."""
    orders = {name.split(".", 1)[1]: spec.get("order") for name, spec in PROPERTIES.items()}
    assert all(isinstance(o, int) for o in orders.values()), orders
    assert len(set(orders.values())) == len(orders)
    first = sorted(orders, key=orders.__getitem__)
    assert first[:3] == ["interpreter", "verifyOnSave", "verifyAfterAutosave"]
    assert first.index("maxMessageMb") > first.index("select")


def test_the_extension_page_is_the_users_readme_and_its_images_ship():
    """vsce packages client-vscode/README.md, with its images inlined as data: URIs
    (client-vscode/readme.mjs), as the extension's page: VS Code's extension page admits images
    from https: and data: only, so a relative link to a packaged PNG showed as a broken image
    (issue 34). The images it shows must exist, and the packaged page holds each one."""
    import re
    import subprocess

    script = MANIFEST["scripts"]["package"]
    assert "node client-vscode/readme.mjs dist/README.md" in script and "--readme-path dist/README.md" in script
    readme = (ROOT / "client-vscode" / "README.md").read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", readme)
    assert images and all((ROOT / image).is_file() for image in images), images
    shipped = (ROOT / ".vscodeignore").read_text(encoding="utf-8")
    assert "!client-vscode/images/icon.png" in shipped and "\n!README.md" not in shipped
    node = __import__("shutil").which("node")
    if node is not None:
        out = ROOT / "out" / "README.test.md"
        subprocess.run([node, str(ROOT / "client-vscode" / "readme.mjs"), str(out)], check=True, capture_output=True)
        packaged = out.read_text(encoding="utf-8")
        assert packaged.count("](data:image/png;base64,") == len(images)
        assert not re.search(r"!\[[^\]]*\]\((?!data:)", packaged)
    assert (ROOT / MANIFEST["icon"]).is_file()


def test_the_workspace_state_folder_is_hidden_from_the_explorer():
    """`.tritonsmith/` (the state database, journals, patches) is the tool's, not the user's:
    VS Code hides it by default; a user can still show it (the learned rules have their view)."""
    assert MANIFEST["contributes"]["configurationDefaults"]["files.exclude"] == {"**/.tritonsmith": True}
