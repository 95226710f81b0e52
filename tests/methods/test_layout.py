"""The methods' layout: every method in a family sub-package that cites its papers, and no code
outside `pipeline/methods/` reaching into a family's modules."""

import ast
import importlib
import re
from pathlib import Path

import pytest

import pipeline.methods
from pipeline.methods import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
METHODS = Path(pipeline.methods.__file__).parent
FAMILIES = ("voting", "bradley_terry", "game_theory", "council")
HELPERS = ("numerics",)
# tests and benchmarks exercise a family's modules directly; the library and the flows may not
OUTSIDE = ("pipeline", "flows", "experiments", "infra")


def citation_keys() -> set[str]:
    return set(re.findall(r"^\| (\[[^]]+\]) \|", (ROOT / "docs" / "references.md").read_text(), re.M))


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_method_lives_in_a_family(name):
    module = REGISTRY[name].fn.__module__
    parts = module.split(".")
    assert parts[:2] == ["pipeline", "methods"] and len(parts) == 4 and parts[2] in FAMILIES, (name, module)


def test_the_sub_packages_are_the_families_and_their_helpers():
    found = sorted(p.name for p in METHODS.iterdir() if (p / "__init__.py").exists())
    assert found == sorted(FAMILIES + HELPERS)


@pytest.mark.parametrize("package", FAMILIES + HELPERS)
def test_each_sub_package_says_what_it_holds_and_cites_its_papers(package):
    doc = importlib.import_module(f"pipeline.methods.{package}").__doc__ or ""
    modules = sorted(p.stem for p in (METHODS / package).glob("*.py") if p.stem != "__init__")
    assert all(f"`{m}`" in doc for m in modules), f"{package}'s docstring names {modules}"
    cited = {f"[{key}]" for key in re.findall(r"\[([A-Za-z]+\d*)[],]", doc)}
    assert cited and cited <= citation_keys(), cited - citation_keys()


def imports_of(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every `import` and `from ... import` in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((a.name, []) for a in node.names)
    return found


def family_internals_reached(path: Path) -> list[str]:
    """The imports in `path` of a family's modules, or of names its package does not export."""
    reached = []
    for module, names in imports_of(path):
        parts = module.split(".")
        if parts[:2] != ["pipeline", "methods"] or len(parts) < 3 or parts[2] not in FAMILIES + HELPERS:
            continue
        public = getattr(importlib.import_module(".".join(parts[:3])), "__all__", [])
        if len(parts) > 3 or not names or set(names) - set(public):
            reached.append(f"{path}: {module} {names}")
    return reached


def test_no_code_outside_the_methods_reaches_into_a_family():
    files = [f for top in OUTSIDE for f in (ROOT / top).rglob("*.py") if METHODS not in f.parents]
    assert [r for f in files for r in family_internals_reached(f)] == []


def test_the_check_sees_a_family_module_imported_from_outside(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("from pipeline.methods.bradley_terry.core import fit\n"
                       "from pipeline.methods.bradley_terry import Cells, fit\n"
                       "from pipeline.methods.bradley_terry import Cells\n")
    reached = family_internals_reached(planted)
    assert [r.split(": ", 1)[1] for r in reached] == ["pipeline.methods.bradley_terry.core ['fit']",
                                                      "pipeline.methods.bradley_terry ['Cells', 'fit']"]
