"""``storm_import``: moving a model checker's model in and out of the library (issue 36, item 4's
goal: 60,000 choices out of Storm in under 0.5 s).

The model is stormpy's shipped ``coin2.nm`` with ``K = 320`` (40,976 states, 61,456 choices,
76,812 transitions; the quick run: ``K = 64``). Rows: Storm building the model (for scale), the
library's extraction (Storm writes its UMB binary archive, read with NumPy:
``cmdp_rl.model.storm.storm_raw``), ``from_storm`` (the extraction plus the CMDP, padded), the
alternatives measured when choosing the path (a Python loop over Storm's matrix rows; Storm's DRN
text export alone), and the way back: ``to_drn`` (NumPy), ``to_storm`` (a UMB archive written with
NumPy), and Storm parsing the DRN text that ``to_drn`` wrote. Needs stormpy (the storm extra).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from .common import Col, Table, banner, fmt_time, measure


def _python_loop(model: Any) -> int:
    """The bridge the issue replaced: every entry of every row through Python."""
    matrix = model.transition_matrix
    entries = 0
    for row in range(model.nr_choices):
        for entry in matrix.get_row(row):
            entries += entry.column >= 0 and entry.value > 0
    return entries


def run(quick: bool = False) -> Table | None:
    """Run the ``storm_import`` benchmark, print and save its table (``None`` without stormpy)."""
    try:
        import stormpy
        import stormpy.examples.files as files
    except ImportError:
        print('storm_import: skipped: needs stormpy (pip install "cmdp-rl[storm]")')
        return None
    from cmdp_rl.model.drn import to_drn
    from cmdp_rl.model.storm import from_storm, storm_raw, to_storm

    K = 64 if quick else 320
    reps = 3 if quick else 7
    banner(f"storm_import: coin2.nm with K = {K}" + (" (quick)" if quick else ""))
    program = stormpy.parse_prism_program(str(Path(files.prism_mdp_coin_2_2).parent / "coin2.nm"))
    program = stormpy.instantiate_constants(program, f"K={K}")[0]
    options = stormpy.BuilderOptions()
    options.set_build_all_reward_models()
    options.set_build_all_labels()
    options.set_build_choice_labels()
    build = measure(lambda: stormpy.build_model(program, options=options), reps, warmup=1)
    storm_model = build.result
    model = from_storm(storm_model, reward="steps", H=50)
    table = Table(
        "storm_import",
        f"coin2.nm, K = {K}: {storm_model.nr_states:,} states, {storm_model.nr_choices:,} choices, "
        f"{storm_model.nr_transitions:,} transitions (median seconds)",
        [Col("step", "step", left=True), Col("seconds", "seconds", fmt_time), Col("path", "how", left=True)],
        notes=[f"median of {reps} runs after one warm-up run (the Python loop: one run)"],
    )
    with tempfile.TemporaryDirectory() as folder:
        drn = os.path.join(folder, "m.drn")
        rows = [
            ("Storm builds the model", build, "stormpy.build_model (for scale)"),
            ("extraction", measure(lambda: storm_raw(storm_model), reps, warmup=1), "UMB written by Storm, NumPy"),
            ("from_storm", measure(lambda: from_storm(storm_model, reward="steps", H=50), reps, warmup=1), "+ CMDP"),
            ("Python loop over rows", measure(lambda: _python_loop(storm_model), 1), "the replaced bridge"),
            (
                "Storm's DRN export",
                measure(lambda: stormpy.io.export_to_drn(storm_model, drn), reps, warmup=1),
                "the alternative",
            ),
            ("to_drn", measure(lambda: to_drn(model, drn), reps, warmup=1), "NumPy text"),
            ("to_storm", measure(lambda: to_storm(model), reps, warmup=1), "UMB written with NumPy"),
            ("Storm parses to_drn's file", measure(lambda: stormpy.build_model_from_drn(drn), 1), "the alternative"),
        ]
    for step, m, how in rows:
        seconds = float(m.stats.median)
        print(f"  {step}: {fmt_time(seconds)}", flush=True)
        table.add(step=step, seconds=seconds, path=how)
    table.print()
    table.save(quick, params={"K": K, "reps": reps, "choices": int(storm_model.nr_choices)})
    return table
