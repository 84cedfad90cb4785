"""Check pyproject.toml's declared lower bounds against known advisories (the step of ``.ci/run``).

Every requirement pyproject.toml declares (the dependencies, every extra, the build system) is
reduced to its lower bound (``numpy>=1.24`` -> ``numpy==1.24``; no bound: version 0), and

1. ``pip-audit`` audits exactly those versions (``-r`` a pinned list, ``--no-deps
   --disable-pip``: nothing is installed or resolved) against its advisory service, ignoring the
   advisories ``.ci/audit-ignore.toml`` names (``--ignore-vuln``);
2. the same bounds are checked against the advisories recorded in ``.ci/advisories.toml``.

It fails (exit 1) when a declared lower bound admits an advisory that the ignore list does not
name, from either source. When pip-audit is missing, or its service cannot be reached, or it
skips a package (a sandbox without the advisory service: PyPI's per-version pages answer 404
there, and pip-audit then reports every package as "not found on PyPI" and exits 0), the step
says so loudly on stderr and stands on the recorded table alone: it does not fail for the
network, and it does not pass on a silent pip-audit either. ``tests/scripts/test_audit_dependencies.py``
keeps the table honest.

    python scripts/audit_dependencies.py [--pyproject FILE] [--no-pip-audit]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / ".ci" / "advisories.toml"
IGNORE = ROOT / ".ci" / "audit-ignore.toml"


@dataclass(frozen=True)
class Bound:
    """One declared requirement: its package (canonical name), lower bound and where it is declared."""

    name: str
    floor: Version
    where: str
    text: str


@dataclass(frozen=True)
class Finding:
    """A declared lower bound inside an advisory's range."""

    bound: Bound
    id: str
    aliases: tuple[str, ...]
    fixed: str
    summary: str
    source: str

    def line(self) -> str:
        also = f" ({', '.join(self.aliases)})" if self.aliases else ""
        fix = "no fixed release" if self.fixed in ("", "none") else f"fixed in {self.fixed}"
        return (
            f"{self.bound.where}: {self.bound.text} admits {self.bound.name} {self.bound.floor}, affected by "
            f"{self.id}{also}: {self.summary} ({fix}; reported by {self.source})"
        )


def lower_bound(req: Requirement) -> Version:
    """The smallest version ``req`` admits: the largest ``>=``/``==``/``~=`` version, or the version
    just above a ``>`` one; ``0`` when it has none."""
    floor = Version("0")
    for spec in req.specifier:
        if spec.operator in (">=", "==", "~=", "==="):
            v = Version(spec.version.rstrip(".*"))
        elif spec.operator == ">":
            v = Version(spec.version + ".post0")  # the smallest version above it for our purposes
        else:
            continue
        floor = max(floor, v)
    return floor


def declared_bounds(pyproject: Path) -> list[Bound]:
    """Every requirement of ``pyproject`` with its lower bound (markers ignored: a bound applies
    wherever it is installed)."""
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    groups: list[tuple[str, list[str]]] = [("build-system.requires", data.get("build-system", {}).get("requires", []))]
    project = data.get("project", {})
    groups.append(("project.dependencies", project.get("dependencies", [])))
    for extra, reqs in project.get("optional-dependencies", {}).items():
        groups.append((f"project.optional-dependencies.{extra}", reqs))
    out = []
    for where, reqs in groups:
        for text in reqs:
            req = Requirement(text)
            out.append(Bound(canonicalize_name(req.name), lower_bound(req), where, text))
    return out


def load_table(path: Path = TABLE) -> dict[str, list[dict[str, Any]]]:
    """``.ci/advisories.toml``: canonical package name -> its recorded advisories."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {canonicalize_name(name): list(entry.get("advisories", [])) for name, entry in data["packages"].items()}


def load_ignores(path: Path = IGNORE) -> list[dict[str, Any]]:
    """``.ci/audit-ignore.toml``'s entries (id, aliases, package, reason)."""
    return list(tomllib.loads(path.read_text(encoding="utf-8")).get("ignore", []))


def ignored_ids(ignores: list[dict[str, Any]]) -> set[str]:
    """Every id and alias the ignore list names."""
    return {i for entry in ignores for i in (entry["id"], *entry.get("aliases", []))}


def table_findings(bounds: list[Bound], table: dict[str, list[dict[str, Any]]], ignore: set[str]) -> list[Finding]:
    """The recorded advisories whose range holds a declared lower bound (ignored ones left out).

    Raises:
        KeyError: a declared package has no entry in the table (record it, even with no advisory).
    """
    found = []
    for bound in bounds:
        if bound.name not in table:
            raise KeyError(f"{bound.name} ({bound.where}) has no [packages.{bound.name}] entry in {TABLE.name}")
        for adv in table[bound.name]:
            ids = {adv["id"], *adv.get("aliases", [])}
            if ids & ignore:
                continue
            if SpecifierSet(adv["affected"]).contains(bound.floor, prereleases=True):
                found.append(
                    Finding(
                        bound,
                        adv["id"],
                        tuple(adv.get("aliases", [])),
                        adv.get("fixed", ""),
                        adv.get("summary", ""),
                        "the recorded table",
                    )
                )
    return found


def parse_pip_audit(report: dict[str, Any], bounds: list[Bound], ignore: set[str]) -> tuple[list[Finding], list[str]]:
    """pip-audit's JSON report of the pinned bounds: the advisories found (ignored ones left out)
    and the packages it skipped (with its reason): a skipped package was not audited."""
    by_name = {b.name: b for b in bounds}
    findings, skipped = [], []
    for dep in report.get("dependencies", []):
        name = canonicalize_name(dep.get("name", ""))
        if "skip_reason" in dep:
            skipped.append(f"{name}: {dep['skip_reason']}")
            continue
        bound = by_name.get(name)
        for vuln in dep.get("vulns", []):
            ids = {vuln.get("id", ""), *vuln.get("aliases", [])}
            if bound is None or ids & ignore:
                continue
            fixed = ", ".join(vuln.get("fix_versions", [])) or "none"
            summary = (vuln.get("description") or "").strip().split("\n", 1)[0][:160]
            findings.append(Finding(bound, vuln["id"], tuple(vuln.get("aliases", [])), fixed, summary, "pip-audit"))
    return findings, skipped


def run_pip_audit(bounds: list[Bound], ignores: list[dict[str, Any]]) -> dict[str, Any] | str:
    """pip-audit on the pinned lower bounds: its JSON report, or why there is none (a string)."""
    exe = shutil.which("pip-audit") or (str(Path(sys.executable).with_name("pip-audit")))
    if not os.path.exists(exe):
        return "pip-audit is not installed (pip install -e '.[dev]')"
    pins = sorted({f"{b.name}=={b.floor}" for b in bounds if b.floor != Version("0")})
    with tempfile.TemporaryDirectory() as tmp:
        req, out = Path(tmp) / "bounds.txt", Path(tmp) / "report.json"
        req.write_text("\n".join(pins) + "\n", encoding="utf-8")
        cmd = [
            exe,
            "--disable-pip",
            "--no-deps",
            "-r",
            str(req),
            "-f",
            "json",
            "-o",
            str(out),
            "--progress-spinner",
            "off",
        ]
        for i in sorted(ignored_ids(ignores)):
            cmd += ["--ignore-vuln", i]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return "pip-audit did not answer within 10 minutes"
        if not out.exists() or not out.read_text(encoding="utf-8").strip():
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            return f"pip-audit could not reach its advisory service (exit {proc.returncode}: {last[:200]})"
        report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pyproject", type=Path, default=ROOT / "pyproject.toml")
    parser.add_argument("--table", type=Path, default=TABLE)
    parser.add_argument("--ignore", type=Path, default=IGNORE)
    parser.add_argument("--no-pip-audit", action="store_true", help="the recorded table only (no network)")
    args = parser.parse_args(argv)

    bounds = declared_bounds(args.pyproject)
    ignores = load_ignores(args.ignore)
    ignore = ignored_ids(ignores)
    try:
        findings = table_findings(bounds, load_table(args.table), ignore)
    except KeyError as exc:
        print(f"audit: {exc.args[0]}", file=sys.stderr)
        return 1
    print(f"audit: {len(bounds)} declared requirements; recorded table: {len(findings)} advisories admitted")

    if args.no_pip_audit:
        print("audit: pip-audit not run (--no-pip-audit): the recorded table alone", file=sys.stderr)
    else:
        result = run_pip_audit(bounds, ignores)
        if isinstance(result, str):
            reason, skipped = result, []
        else:
            found, skipped = parse_pip_audit(result, bounds, ignore)
            findings += found
            reason = ""
            print(f"audit: pip-audit audited {len(result.get('dependencies', [])) - len(skipped)} pinned bounds")
        if reason or skipped:
            banner = "!" * 78
            print(banner, file=sys.stderr)
            print(f"audit: WARNING: {reason or f'pip-audit skipped {len(skipped)} package(s)'}", file=sys.stderr)
            for line in skipped[:5]:
                print(f"audit:   {line}", file=sys.stderr)
            print(
                "audit: the advisory service is unreachable from here: the declared lower bounds are checked "
                f"against the recorded table ({args.table.name}) "
                "alone, which may lack advisories published since it was last updated",
                file=sys.stderr,
            )
            print(banner, file=sys.stderr)

    if findings:
        for f in findings:
            print(f"audit: {f.line()}", file=sys.stderr)
        print(
            f"audit: {len(findings)} advisory(ies) admitted by the declared lower bounds: raise the bound, "
            f"or (only for an advisory with no fixed release) name it in {IGNORE.name} with the reason",
            file=sys.stderr,
        )
        return 1
    print(
        "audit: no declared lower bound admits a known advisory (ignored: "
        + (", ".join(sorted(e["id"] for e in ignores)) or "none")
        + ")"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
