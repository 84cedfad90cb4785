"""The ``cmdp-rl`` command line's exit codes (one error boundary for every command,
[`main`][cmdp_rl.cli.entry.main]):

* 0 success (``solve``: optimal); 1 the problem is infeasible;
* 2 bad input: a bad argument, file, path, number, a refused overwrite or a job beyond
  a resource limit; one line on stderr, nothing written;
* 3 an internal error or a solver failure: one line on stderr naming the file that holds
  the full traceback (``--debug`` prints it instead);
* 4 uncertified: a feasible plan whose certified gap ``V* - value`` could not be closed to
  ``--gap-tol`` (``solve``'s status ``uncertified``; the plan and its gap are printed);
* 130 interrupted (SIGINT, Ctrl-C), 143 terminated (SIGTERM): workers are stopped,
  finished runs are kept, rerunning resumes; 141 the reader of the output went away
  (broken pipe).
"""

EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_UNCERTIFIED = 0, 1, 2, 3, 4
EXIT_BROKEN_PIPE, EXIT_SIGINT, EXIT_SIGTERM = 141, 130, 143

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_INFEASIBLE",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "EXIT_UNCERTIFIED",
]
