"""The plumbing every floor stands on: errors, validation, numbers a user types, names of the
library's choices, resource limits, atomic writes, decoding of damaged files, paths, results
folders, interrupts, the progress bar and the version.

Nothing here imports NumPy at module level where the command line's ``--help`` reads it."""
