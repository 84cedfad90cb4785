"""The one progress bar of the library: tqdm on stderr with an ETA that is not absurd early on.

Every long loop (sweeps of runs, learners' episodes, policy-gradient iterations, simulator
episodes) shows this bar. Four choices differ from tqdm's defaults, all measured:

* the rate is the average since the start (``smoothing=0``), not a moving average of the last
  few updates: the first updates include compilation or the longest runs, and a moving average
  over them swung the ETA to hours (4:35:46 was seen on a three-minute sweep);
* no ETA is shown before a tenth of the work is done (at least two updates): the bar says so;
* a sweep's bar counts work, not runs ([`WorkBar`][cmdp_rl.plumbing.progress.WorkBar]): its
  runs differ in cost a hundredfold and the longest go first, so a count of runs put the ETA at
  1:29:53 with 7:47 left;
* on a stream that is not a terminal (a file, a pipe, a notebook's stream) the bar is written as
  whole lines, one per tenth of the work at most, so at most 12 per bar (the first, ten, the
  last), instead of a redraw every half second.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from tqdm.auto import tqdm

#: the bar's format until a tenth of the work is done: elapsed time, no ETA yet
EARLY_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}, ETA at 10%{postfix}]"
#: a [`WorkBar`][cmdp_rl.plumbing.progress.WorkBar]'s formats (its items counted in the postfix)
WORK_EARLY_FORMAT = "{l_bar}{bar}| [{elapsed}, ETA at 10% of the work{postfix}]"
WORK_FORMAT = "{l_bar}{bar}| [{elapsed}<{remaining}{postfix}]"
#: lines a bar writes at most on a stream that is not a terminal
MAX_LINES = 12


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (it has ``isatty`` and that says so)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):  # a closed or detached stream
        return False


class ProgressBar(tqdm):  # type: ignore[type-arg]
    """tqdm with the average rate since the start, no ETA before 10% of ``total``, and whole
    lines (at most ``MAX_LINES``) on a stream that is not a terminal.

    Args (beyond tqdm's): ``eta_after``: how much work must be done before the ETA shows
    (default: a tenth of the work still to do, at least 2 units); ``late_format``: the format
    once the ETA shows (default: tqdm's).

    On a file or a pipe (``file`` without a true ``isatty``) the bar writes a line when it starts,
    then only after each further tenth of the work (``miniters``, no time-based redraws), and
    one when it closes, each ended by a newline instead of redrawn with a carriage return.
    """

    def __init__(
        self, *args: Any, eta_after: float | None = None, late_format: str | None = None, **kwargs: Any
    ) -> None:
        kwargs.setdefault("smoothing", 0.0)
        kwargs.setdefault("mininterval", 0.5)
        kwargs.setdefault("dynamic_ncols", True)
        kwargs.setdefault("bar_format", EARLY_FORMAT)
        self._lines = not is_terminal(kwargs.get("file") or sys.stderr)
        self._last_line: str | None = None
        self._last_n = 0.0
        total, initial = float(kwargs.get("total") or 0), float(kwargs.get("initial") or 0)
        todo = max(0.0, total - initial)
        if self._lines:
            kwargs.setdefault("miniters", max(todo / (MAX_LINES - 2), 1e-300))
            kwargs["mininterval"] = 0.0
            kwargs["maxinterval"] = math.inf  # tqdm's monitor thread would force redraws
        self._early_format = kwargs["bar_format"]
        self._late_format = late_format
        super().__init__(*args, **kwargs)
        self._eta_from = initial + (max(2, todo // 10) if eta_after is None else float(eta_after))

    def update(self, n: float | None = 1) -> bool | None:
        if getattr(self, "bar_format", None) is self._early_format and self.n + (n or 0) >= self._eta_from:
            self.bar_format = self._late_format  # None: tqdm's default format, with the ETA
        return super().update(n)

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:  # type: ignore[override]  # tqdm returns it
        """On a terminal, tqdm's redraw; elsewhere one whole line per call (a repeat of the
        state already written, or a request to clear it, writes nothing)."""
        if not self._lines:
            return bool(super().display(msg, pos))
        text = self.__str__() if msg is None else msg
        if not text or (self._last_line is not None and self.n == self._last_n):
            return False
        self.fp.write(("" if self._last_line is None else "\n") + text)
        self.fp.flush()
        self._last_line, self._last_n = text, self.n
        return True


class WorkBar(ProgressBar):
    """A bar over items of unequal cost (a sweep's runs): the bar, its percentage and its ETA count
    the estimated work of the items done, the postfix counts the items.

    Args:
        work: the estimated work of all items (any unit, e.g. seconds).
        items: how many items.
        desc: the bar's label.
        unit: what an item is called (``"run"``: "3/150 runs").
        initial_work: the work already done (a resumed sweep).
        initial_items: the items already done.
        disable: tqdm's (``None``: hidden unless ``file`` is a terminal).
        file: the stream (default stderr).
    """

    def __init__(
        self,
        work: float,
        items: int,
        *,
        desc: str,
        unit: str,
        initial_work: float = 0.0,
        initial_items: int = 0,
        disable: bool | None = False,
        file: Any = None,
    ) -> None:
        self.items, self.items_done, self.item_unit = int(items), int(initial_items), unit
        super().__init__(
            total=float(work),
            initial=float(initial_work),
            desc=desc,
            disable=disable,
            file=file,
            bar_format=WORK_EARLY_FORMAT,
            late_format=WORK_FORMAT,
            eta_after=max(0.0, float(work) - float(initial_work)) / 10,
            postfix=self._count(""),
        )

    def _count(self, label: str) -> str:
        return f"{self.items_done}/{self.items} {self.item_unit}s" + (f", {label}" if label else "")

    def advance(self, work: float, label: str = "") -> None:
        """One item done, of estimated ``work``; ``label`` (e.g. its id) is shown after the count."""
        self.items_done += 1
        self.set_postfix_str(self._count(label), refresh=False)
        left = float(self.total or 0.0) - self.n  # the sum in another order may differ in the last bit
        self.update(left if self.items_done >= self.items else min(float(work), left))


def progress_bar(total: int, desc: str, unit: str, *, show: bool = True, initial: int = 0) -> ProgressBar:
    """The progress bar over ``total`` units of ``unit`` (``"ep"``, ``"run"``, ``"it"``), on stderr
    when stderr is a terminal; ``show=False`` gives a disabled bar with the same interface.

    Not on a pipe or a file: there the bar's lines would stand before a refusal's one line (a run
    refused mid-way, e.g. by a simulator's bad step, says so in exactly one line on stderr). A
    stderr that has no ``isatty`` (some notebooks and wrappers) gets the bar as whole lines, at
    most ``MAX_LINES``."""
    return ProgressBar(total=total, initial=initial, desc=desc, unit=unit, disable=None if show else True)


def work_bar(work: float, items: int, desc: str, unit: str, *, show: bool = True, **done: Any) -> WorkBar:
    """A [`WorkBar`][cmdp_rl.plumbing.progress.WorkBar] on stderr, shown as
    [`progress_bar`][cmdp_rl.plumbing.progress.progress_bar] shows its bar (``done``:
    ``initial_work``, ``initial_items``)."""
    return WorkBar(work, items, desc=desc, unit=unit, disable=None if show else True, **done)


__all__ = [
    "EARLY_FORMAT",
    "MAX_LINES",
    "WORK_EARLY_FORMAT",
    "WORK_FORMAT",
    "ProgressBar",
    "WorkBar",
    "is_terminal",
    "progress_bar",
    "work_bar",
]
