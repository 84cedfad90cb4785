"""Problem specs read before anything is built: ``parse_spec``, the typed overrides and the
``c_bar`` override's thresholds; ``problem_sizes`` counts a family's sizes without building it."""

from __future__ import annotations

import numpy as np
import pytest

import cmdp_rl.envs.n_constraints as n_constraints
from cmdp_rl import CMDPInputError
from cmdp_rl.envs.registry import make, problem_sizes
from cmdp_rl.envs.specs import parse_spec, parse_thresholds, parse_value


def test_parse_value_takes_the_type_of_the_default() -> None:
    assert parse_value("p", "n", "12", 4) == 12 and isinstance(parse_value("p", "n", "12", 4), int)
    assert parse_value("p", "f", "0.25", 0.5) == 0.25
    assert parse_value("p", "slippery", "false", True) is False
    assert parse_value("p", "sizes", "[1, 2]", None) == [1, 2]
    with pytest.raises(CMDPInputError, match=r"^p: parameter n"):
        parse_value("p", "n", "1.5", 4)
    with pytest.raises(CMDPInputError, match=r"^p: parameter slippery='maybe' must be a bool"):
        parse_value("p", "slippery", "maybe", True)


def test_parse_spec_and_thresholds() -> None:
    assert parse_spec(" garnet:S=5, seed=2 ") == ("garnet", {"S": "5", "seed": "2"})
    with pytest.raises(CMDPInputError, match="given twice"):
        parse_spec("garnet:S=5,S=6")
    np.testing.assert_array_equal(parse_thresholds("p", "0.5", 3), [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(parse_thresholds("p", "0.1/0.2", 2), [0.1, 0.2])
    with pytest.raises(CMDPInputError, match=r"^p: c_bar: 2 values given for 3 constraints"):
        parse_thresholds("p", "0.1/0.2", 3)


@pytest.mark.parametrize("spec", ["copies:n=3", "distinct:n=5,size=4,H=7", "distinct:n=2,H=6", "1a", "garnet:S=6,N=2"])
def test_problem_sizes_are_the_built_models(spec: str) -> None:
    m = make(spec)
    assert problem_sizes(spec) == (m.S, m.A, m.H, m.N)


def test_problem_sizes_of_the_study_families_build_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The n-constraints families design each threshold with an exact plan: counting them must not."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("built")

    monkeypatch.setattr(n_constraints, "copies", refuse)
    monkeypatch.setattr(n_constraints, "distinct", refuse)
    assert problem_sizes("copies:n=16,size=3") == (9, 4, 10, 16)
    assert problem_sizes("distinct:n=64,H=12") == (9, 4, 12, 64)
    with pytest.raises(CMDPInputError, match="unknown parameter 'm'"):
        problem_sizes("distinct:m=3")


def test_problem_sizes_check_the_parameters_as_a_build_does() -> None:
    for spec, match in (
        ("distinct:n=0", r"^n_constraints: "),
        ("copies:size=3,H=4", r"^H: must be at least 2 \* \(size - 1\) \+ 1 = 5"),
        ("distinct:f=1.5", r"^f: "),
        ("copies:n=2,c_bar=0.1/0.2/0.3", r"^copies: c_bar: 3 values given for 2 constraints"),
    ):
        with pytest.raises(CMDPInputError, match=match):
            problem_sizes(spec)
        if "c_bar" not in spec:
            with pytest.raises(CMDPInputError, match=match):
                make(spec)
