"""Experiment runner for the paper's protocol (see the docs pages 'Scenarios' and 'Reproducing the paper').

* [`ExperimentConfig`][cmdp_rl.experiments.config.ExperimentConfig] ([`config`][cmdp_rl.experiments.config]): what to
  run; presets [`quick`][cmdp_rl.experiments.config.ExperimentConfig.quick] and the full default;
  [`load_config`][cmdp_rl.experiments.config.load_config] reads TOML. The default budgets live in
  [`cmdp_rl.experiments.config`][cmdp_rl.experiments.config] (``FULL_*``, ``QUICK_*``).
* [`run_sweep`][cmdp_rl.experiments.backends.run_sweep] ([`backends`][cmdp_rl.experiments.backends]): every (scenario,
  algorithm, run) on local processes or Ray, one atomically written file per run, resumable.
* [`results_csv`][cmdp_rl.experiments.aggregate.results_csv],
  [`summary_markdown`][cmdp_rl.experiments.aggregate.summary_markdown] ([`aggregate`][cmdp_rl.experiments.aggregate]),
  [`write_figures`][cmdp_rl.experiments.plots.write_figures] ([`plots`][cmdp_rl.experiments.plots]).
* [`reproduce`][cmdp_rl.experiments.reproduce.reproduce]: all of the above into one folder.

Example::

    from cmdp_rl.experiments import ExperimentConfig, reproduce
    res = reproduce(ExperimentConfig.quick(jobs=2), "results/quick")
    print(res.summary)
"""

from cmdp_rl.experiments.aggregate import csv_columns, mean_ci, results_csv, summary_markdown
from cmdp_rl.experiments.backends import SweepReport, run_sweep
from cmdp_rl.experiments.config import ALGORITHMS, CONFIG_KEYS, ExperimentConfig, config_from_mapping, load_config
from cmdp_rl.experiments.plots import write_figures
from cmdp_rl.experiments.reproduce import ReproduceResult, reproduce
from cmdp_rl.experiments.runner import RunRecord, RunSpec, execute_run, run_specs
from cmdp_rl.experiments.store import load_all, scan

__all__ = [
    "ALGORITHMS",
    "CONFIG_KEYS",
    "ExperimentConfig",
    "ReproduceResult",
    "RunRecord",
    "RunSpec",
    "SweepReport",
    "config_from_mapping",
    "csv_columns",
    "execute_run",
    "load_all",
    "load_config",
    "mean_ci",
    "reproduce",
    "results_csv",
    "run_specs",
    "run_sweep",
    "scan",
    "summary_markdown",
    "write_figures",
]
