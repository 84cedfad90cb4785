"""The dependency audit (scripts/audit_dependencies.py, a step of .ci/run) and its recorded
advisory table (.ci/advisories.toml) and ignore list (.ci/audit-ignore.toml): the table covers
every declared package, its ranges parse, the ignore list only names advisories without a fixed
release, the current lower bounds pass, and the bounds this issue raised would fail."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def _audit() -> ModuleType:
    spec = importlib.util.spec_from_file_location("audit_dependencies", ROOT / "scripts" / "audit_dependencies.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["audit_dependencies"] = module
    spec.loader.exec_module(module)
    return module


audit = _audit()


def test_every_declared_package_is_in_the_table() -> None:
    table = audit.load_table()
    bounds = audit.declared_bounds(ROOT / "pyproject.toml")
    assert {"numpy", "tqdm", "pyarrow", "ray", "pytest", "pip-audit", "setuptools", "wheel"} <= {b.name for b in bounds}
    missing = sorted({b.name for b in bounds} - set(table))
    assert not missing, f"record these in .ci/advisories.toml (with advisories = [] if none is known): {missing}"


def test_every_recorded_advisory_is_well_formed() -> None:
    for name, advisories in audit.load_table().items():
        for adv in advisories:
            assert adv["id"] and adv["summary"], (name, adv)
            affected = SpecifierSet(adv["affected"])
            fixed = adv["fixed"]
            if fixed != "none":  # the fixed release is outside the range, the one just below it inside
                assert not affected.contains(Version(fixed), prereleases=True), (name, adv["id"])
                assert any(s.operator in ("<", "<=") for s in affected), (name, adv["id"])
            else:
                assert all(s.operator in (">=", ">") for s in affected), (name, adv["id"])


def test_the_ignore_list_names_only_unfixed_recorded_advisories_with_a_reason() -> None:
    table = audit.load_table()
    ignores = audit.load_ignores()
    assert ignores, "the ignore list is expected to name ray's disputed advisory"
    for entry in ignores:
        assert len(entry["reason"].split()) >= 10, entry["id"]
        recorded = {a["id"]: a for a in table[entry["package"]]}
        assert entry["id"] in recorded, entry["id"]
        assert recorded[entry["id"]]["fixed"] == "none", f"{entry['id']} has a fixed release: raise the bound instead"


def test_the_declared_lower_bounds_admit_no_recorded_advisory() -> None:
    bounds = audit.declared_bounds(ROOT / "pyproject.toml")
    found = audit.table_findings(bounds, audit.load_table(), audit.ignored_ids(audit.load_ignores()))
    assert not found, [f.line() for f in found]
    floors = {b.name: b.floor for b in bounds}
    assert floors["pyarrow"] >= Version("14.0.1") and floors["tqdm"] >= Version("4.66.3")


@pytest.mark.parametrize(
    ("requirement", "advisory"),
    [
        ("pyarrow>=14", "PYSEC-2023-238"),
        ("tqdm>=4.65", "CVE-2024-34062"),
        ("ray[client]>=2.9", "GHSA-q279-jhrf-cc6v"),
        ("pytest>=7.4", "GHSA-6w46-j5rx-g56g"),
        ("setuptools>=68", "GHSA-5rjg-fvgr-3xxf"),
        ("wheel", "PYSEC-2022-43017"),
    ],
)
def test_a_bound_that_admits_an_advisory_fails_the_audit(
    requirement: str, advisory: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f'[project]\nname = "x"\ndependencies = ["{requirement}"]\n')
    assert audit.main(["--pyproject", str(pyproject), "--no-pip-audit"]) == 1
    err = capsys.readouterr().err
    assert advisory in err and requirement in err


def test_an_ignored_advisory_does_not_fail_and_an_unknown_package_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\ndependencies = ["ray>=2.55"]\n')
    assert audit.main(["--pyproject", str(pyproject), "--no-pip-audit"]) == 0  # GHSA-6wgj-66m2-xxp2: ignored
    pyproject.write_text('[project]\nname = "x"\ndependencies = ["no-such-package-recorded>=1"]\n')
    assert audit.main(["--pyproject", str(pyproject), "--no-pip-audit"]) == 1
    assert "no [packages.no-such-package-recorded] entry" in capsys.readouterr().err


def test_pip_audit_reports_are_read_strictly() -> None:
    """A skipped package is not audited (the sandbox's 'not found on PyPI'); an advisory pip-audit
    reports fails unless ignored (by id or alias)."""
    bounds = audit.declared_bounds(ROOT / "pyproject.toml")
    ignore = audit.ignored_ids(audit.load_ignores())
    report = {
        "dependencies": [
            {"name": "tqdm", "skip_reason": "Dependency not found on PyPI and could not be audited: tqdm (4.66.3)"},
            {"name": "numpy", "version": "1.24", "vulns": []},
            {"name": "pyarrow", "version": "14.0.1", "vulns": [{"id": "GHSA-new", "fix_versions": ["99"]}]},
            {"name": "ray", "version": "2.55", "vulns": [{"id": "PYSEC-x", "aliases": ["CVE-2023-48022"]}]},
        ]
    }
    findings, skipped = audit.parse_pip_audit(report, bounds, ignore)
    assert [f.id for f in findings] == ["GHSA-new"]
    assert len(skipped) == 1 and skipped[0].startswith("tqdm")
