"""Learning from a simulator: a Gymnasium environment seen as a black box (in its own process when
asked), the run log that lets a run resume, and [`learn`][cmdp_rl.simulators.learning.learn], which
drives any online learner on it."""
