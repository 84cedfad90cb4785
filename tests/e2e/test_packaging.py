"""Installing prints no setuptools warning about the license (issue 'real models', item 6: it printed
the ``project.license`` deprecation warning twice).

setuptools 77 and later warn, in every build step (pip 25 and later show a build backend's warnings:
twice or three times per install), when ``project.license`` is a TOML table (``{ text = "MIT" }``)
and when a ``License ::`` classifier is given; a string holding an SPDX expression, with the files in
``project.license-files``, is the form they want, and setuptools before 77 cannot read it. Measured
on pip 26.3 with the build isolation's setuptools 84.2.1 in a fresh venv: the table form prints
the warning three times, this form none (``pip install -e . 2>&1 | grep -i license``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def test_the_license_is_an_spdx_string_that_the_build_s_setuptools_reads() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = meta["project"]
    assert isinstance(project["license"], str) and re.fullmatch(r"[A-Za-z0-9.\-+ ()]+", project["license"])
    assert project["license-files"] and all((ROOT / f).is_file() for f in project["license-files"])
    assert not [c for c in project.get("classifiers", []) if c.startswith("License ::")]
    floors = [re.fullmatch(r"setuptools>=(\d+)(?:\.\d+)*", r) for r in meta["build-system"]["requires"]]
    floor = [int(m.group(1)) for m in floors if m]
    assert floor and floor[0] >= 77, meta["build-system"]["requires"]
