"""Benchmark suite of cmdp-rl (run on demand, never by the test suite).

Run all benchmarks with ``python -m benchmarks`` (or ``make bench``), one with
``python -m benchmarks --only NAME``, and a short version with ``--quick``:

* ``elp``: extended-LP solvers on the same instances (fast cold/warm, literal
  LP with HiGHS, Clarabel on the auxiliary form, reference-style PuLP/CBC);
* ``episode``: an Online-CRL episode split into re-plan, acting and scoring;
* ``scaling``: fast-method time and peak memory against ``|S|`` and ``H``
  (growth exponents, ``results/scaling.png``);
* ``reproduce``: wall time and peak memory of ``cmdp-rl reproduce``.

Each benchmark prints a table of medians over repeated runs (with the ratios
measured in the same run) and writes it as JSON and CSV to
``benchmarks/results/`` (``NAME.json``/``NAME.csv``; ``NAME-quick.*`` with ``--quick``).
"""
