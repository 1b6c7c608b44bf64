"""docs/architecture.md maps every module of halo/: a new module without a line there fails."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_module_is_mapped():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    modules = sorted(p.relative_to(ROOT) for p in (ROOT / "halo").rglob("*.py")
                     if p.name != "__init__.py" and "__pycache__" not in p.parts)
    assert modules, "no modules found under halo/"
    missing = [str(p) for p in modules if f"`{p.name}`" not in doc]
    assert not missing, f"docs/architecture.md doesn't name: {', '.join(missing)}"


def test_every_package_has_a_section():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    packages = sorted(p.parent.relative_to(ROOT) for p in (ROOT / "halo").rglob("__init__.py")
                      if p.parent != ROOT / "halo")
    missing = [str(p) for p in packages
               if f"`{p}/`" not in doc and f"`{p.name}/`" not in doc]
    assert not missing, f"docs/architecture.md has no section for: {', '.join(missing)}"
