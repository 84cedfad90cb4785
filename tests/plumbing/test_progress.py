"""The library's one progress bar: no ETA before a tenth of the work, then the average rate."""

from __future__ import annotations

import io

from cmdp_rl.plumbing.progress import EARLY_FORMAT, ProgressBar, progress_bar


def _frames(bar_output: str) -> list[str]:
    return [f.strip() for f in bar_output.replace("\r", "\n").splitlines() if f.strip()]


def test_no_eta_before_a_tenth_then_tqdm_s_eta() -> None:
    out = io.StringIO()
    bar = ProgressBar(total=50, desc="episodes", unit="ep", file=out, mininterval=0)
    for _ in range(50):
        bar.update()
    bar.close()
    frames = _frames(out.getvalue())
    early = [f for f in frames if "ETA at 10%" in f]
    late = [f for f in frames if "<" in f and "ep/s" in f]
    # 50 units: the ETA shows from the 5th on (a tenth), never before
    assert early and all(int(f.split("|")[-1].split("/")[0]) < 5 for f in early), early
    assert late and all(int(f.split("|")[-1].split("/")[0]) >= 5 for f in late), late
    assert bar.smoothing == 0.0  # the rate since the start, not a moving average


def test_resumed_bar_counts_the_tenth_from_what_is_left() -> None:
    out = io.StringIO()
    bar = ProgressBar(total=100, initial=80, desc="runs", unit="run", file=out, mininterval=0)
    bar.update()
    assert bar.bar_format is EARLY_FORMAT  # 1 of the 20 left: no ETA yet
    bar.update()
    assert bar.bar_format is None  # 2 of 20 (a tenth): tqdm's format with the ETA
    bar.close()


def test_a_hidden_bar_takes_the_same_calls() -> None:
    with progress_bar(10, "x", "it", show=False) as bar:
        for _ in range(10):
            bar.update()
        assert bar.disable
