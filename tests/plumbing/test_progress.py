"""The library's one progress bar: no ETA before a tenth of the work, then the average rate."""

from __future__ import annotations

import io

from cmdp_rl.plumbing.progress import EARLY_FORMAT, MAX_LINES, ProgressBar, WorkBar, is_terminal, progress_bar


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


def _lines_of(text: str) -> list[str]:
    assert "\r" not in text  # whole lines, no redraws
    return text.splitlines()


def test_on_a_file_a_long_loop_writes_at_most_twelve_lines() -> None:
    """Issue 'real models', item 6: a bar written to a file or a pipe printed hundreds of updates."""
    for total, step in [(100_000, 1), (10_007, 3), (7, 1), (1_000, 250)]:
        out = io.StringIO()  # isatty() is False
        bar = ProgressBar(total=total, desc="episodes", unit="ep", file=out)
        done = 0
        while done < total:
            bar.update(min(step, total - done))
            done += step
        bar.close()
        lines = _lines_of(out.getvalue())
        assert 2 <= len(lines) <= MAX_LINES == 12, (total, step, lines)
        assert out.getvalue().endswith("\n") and f"{total}/{total}" in lines[-1]
        assert "0/" in lines[0] and "ETA at 10%" in lines[0]


def test_a_stream_without_isatty_gets_lines_and_a_terminal_gets_redraws() -> None:
    class Log:  # a wrapper without isatty, as some notebooks and loggers give
        def __init__(self) -> None:
            self.text = ""

        def write(self, s: str) -> None:
            self.text += s

        def flush(self) -> None:
            pass

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    log, tty = Log(), Terminal()
    assert not is_terminal(log) and is_terminal(tty)
    for stream in (log, tty):
        bar = ProgressBar(total=5000, desc="runs", unit="run", file=stream, mininterval=0)
        for _ in range(5000):
            bar.update()
        bar.close()
    assert len(_lines_of(log.text)) <= MAX_LINES
    assert tty.getvalue().count("\r") > 100  # mininterval=0 on a terminal: a redraw per update


def test_a_work_bar_counts_work_and_shows_the_items() -> None:
    out = io.StringIO()
    bar = WorkBar(100.0, 4, desc="runs", unit="run", file=out)
    for work, label in [(70.0, "long"), (10.0, "a"), (10.0, "b"), (10.0, "c")]:
        bar.advance(work, label)
    bar.close()
    lines = _lines_of(out.getvalue())
    assert "0/4 runs" in lines[0] and "ETA at 10% of the work" in lines[0]
    # one run of four is 70% of the work: the bar says 70%, and the ETA shows from there on
    assert lines[1].startswith("runs:  70%") and "1/4 runs, long" in lines[1] and "<" in lines[1]
    assert lines[-1].startswith("runs: 100%") and "4/4 runs, c" in lines[-1]
    resumed = WorkBar(100.0, 4, desc="runs", unit="run", file=io.StringIO(), initial_work=70.0, initial_items=1)
    assert resumed.n == 70.0 and "1/4 runs" in str(resumed)
    resumed.close()
