"""The one progress bar of the library: tqdm on stderr with an ETA that is not absurd early on.

Every long loop (sweeps of runs, learners' episodes, policy-gradient iterations, simulator
episodes) shows this bar. Two choices differ from tqdm's defaults, both measured:

* the rate is the average since the start (``smoothing=0``), not a moving average of the last
  few updates: the first updates include compilation or the longest runs, and a moving average
  over them swung the ETA to hours (4:35:46 was seen on a three-minute sweep);
* no ETA is shown before a tenth of the work is done (at least two updates): the bar says so.
"""

from __future__ import annotations

from typing import Any

from tqdm.auto import tqdm

#: the bar's format until a tenth of the work is done: elapsed time, no ETA yet
EARLY_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}, ETA at 10%{postfix}]"


class ProgressBar(tqdm):  # type: ignore[type-arg]
    """tqdm with the average rate since the start and no ETA before 10% of ``total``.

    Args (beyond tqdm's): ``eta_after``: how many units must be done before the ETA shows
    (default: a tenth of the work still to do, at least 2).
    """

    def __init__(self, *args: Any, eta_after: int | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("smoothing", 0.0)
        kwargs.setdefault("mininterval", 0.5)
        kwargs.setdefault("dynamic_ncols", True)
        kwargs.setdefault("bar_format", EARLY_FORMAT)
        super().__init__(*args, **kwargs)
        todo = max(0, int(self.total or 0) - int(self.n))
        self._eta_from = int(self.n) + (max(2, todo // 10) if eta_after is None else int(eta_after))

    def update(self, n: float | None = 1) -> bool | None:
        if getattr(self, "bar_format", None) is EARLY_FORMAT and self.n + (n or 0) >= self._eta_from:
            self.bar_format = None  # tqdm's default format, with the ETA
        return super().update(n)


def progress_bar(total: int, desc: str, unit: str, *, show: bool = True, initial: int = 0) -> ProgressBar:
    """The progress bar over ``total`` units of ``unit`` (``"ep"``, ``"run"``, ``"it"``), on stderr
    when stderr is a terminal; ``show=False`` gives a disabled bar with the same interface.

    Not on a pipe or a file: there the bar's redraws are lines of their own, which a log does not
    want and which would stand before a refusal's one line (a run refused mid-way, e.g. by a
    simulator's bad step, says so in exactly one line on stderr)."""
    return ProgressBar(total=total, initial=initial, desc=desc, unit=unit, disable=None if show else True)


__all__ = ["EARLY_FORMAT", "ProgressBar", "progress_bar"]
