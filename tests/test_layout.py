"""The engine's shape, held: its stages are its packages, and no module or class grows into one
that does everything. A newcomer reading the tree should know where a change goes."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "labnotebook"
STAGES = {"declare", "run", "build", "results", "site"}
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 200


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "templates" not in p.parts)


def test_the_package_holds_its_stages_and_a_handful_of_modules_beside_them():
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    beside = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert packages == STAGES
    assert beside == ["__init__.py", "errors.py", "settings.py"]


def test_every_stage_says_what_it_is():
    for stage in STAGES:
        assert ast.get_docstring(ast.parse((PACKAGE / stage / "__init__.py").read_text())), stage


def test_no_module_does_everything():
    long = {p.relative_to(PACKAGE).as_posix(): n for p in modules()
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_no_class_does_everything():
    long = {}
    for p in modules():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES:
                long[f"{p.relative_to(PACKAGE).as_posix()}:{node.name}"] = node.end_lineno - node.lineno + 1
    assert long == {}


def test_no_module_keeps_mutable_state_at_module_level():
    """Module-level names are constants: no lock, event, registry or cache a call changes."""
    mutable = ("Lock", "RLock", "Event", "WeakSet", "WeakValueDictionary")
    found = []
    for p in modules():
        for node in ast.parse(p.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                f = node.value.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                if name in mutable:
                    found.append(f"{p.relative_to(PACKAGE).as_posix()}:{node.lineno}")
    assert found == []
