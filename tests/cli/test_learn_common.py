"""The rules ``cmdp-rl learn``'s modes share: the baselines' options, written once, refused with
the same words on a model's kernel and on a simulator."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from cmdp_rl.cli import main
from cmdp_rl.cli.learn_common import LOG_LEARNERS, baseline_options
from cmdp_rl.plumbing.errors import CMDPInputError


def _args(algorithm: str, bonus_scale: float | None = None, k0: int | None = None) -> argparse.Namespace:
    return argparse.Namespace(algorithm=algorithm, bonus_scale=bonus_scale, k0=k0)


def test_baseline_options_are_the_given_ones() -> None:
    assert LOG_LEARNERS == ("gmbl", "online-crl")
    assert baseline_options(_args("dope", 0.5, 3), ("bonus_scale", "k0")) == {"bonus_scale": 0.5, "k0": 3}
    assert baseline_options(_args("optcmdp", 2.0), ("bonus_scale", "k0")) == {"bonus_scale": 2.0}
    assert baseline_options(_args("online-crl"), ("bonus_scale", "k0")) == {}


@pytest.mark.parametrize(
    "args, checked, message",
    [
        (_args("online-crl", bonus_scale=1.0), ("bonus_scale", "k0"), "--bonus-scale: applies to the baselines"),
        (
            _args("gmbl", k0=2),
            ("bonus_scale", "k0"),
            "--k0: applies to the baselines (plugin, optcmdp, ...), not to gmbl",
        ),
        (_args("online-crl", k0=2), ("bonus_scale",), "--k0: applies to --algo dope only"),
        (_args("optpess", k0=2), ("bonus_scale", "k0"), "--k0: applies to --algo dope only"),
    ],
)
def test_baseline_options_refused(args: argparse.Namespace, checked: tuple[str, ...], message: str) -> None:
    with pytest.raises(CMDPInputError) as info:
        baseline_options(args, checked)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    "argv",
    [
        ["learn", "1a", "--algo", "online-crl", "--episodes", "2", "--bonus-scale", "2"],
        ["learn", "--env", "cmdp_rl/1a-v0", "-H", "3", "--c-bar", "2", "--episodes", "2", "--bonus-scale", "2"],
    ],
    ids=["model", "env"],
)
def test_both_modes_refuse_a_bonus_for_online_crl_alike(
    argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "cmdp-rl learn: error: --bonus-scale: applies to the baselines (plugin, optcmdp, ...), not to online-crl\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_safe_without_a_constraint_is_refused_before_the_log_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from cmdp_rl import random_cmdp

    random_cmdp(3, 2, 2, 0, seed=0).save(tmp_path / "m.npz")
    log = tmp_path / "log.csv"
    log.write_text("not a log\n")  # read_log would refuse it: the --deploy rule comes first
    code = main(["learn", str(tmp_path / "m.npz"), "--from-log", str(log), "--deploy", "certified"])
    assert code == 2
    assert capsys.readouterr().err == (
        "cmdp-rl learn: error: --deploy: certified needs a constraint to certify; the model has none\n"
    )
    code = main(["learn", str(tmp_path / "m.npz"), "--from-log", str(log), "--safe"])  # the deprecated alias
    assert code == 2 and capsys.readouterr().err.count("\n") == 1  # a refusal stays one line
