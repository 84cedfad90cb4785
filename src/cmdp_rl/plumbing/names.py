"""The names the library accepts for its choices (learners, methods, radii, ...), in a module
without imports: the modules that implement them import their names from here, and the command
line's parser offers them without loading NumPy (``cmdp-rl --help`` stays fast).
"""

ONLINE_ALGORITHMS: tuple[str, ...] = (
    "online-crl",
    "plugin",
    "optcmdp",
    "optcmdp-bonus",
    "optdual",
    "optpess",
    "dope",
    "safe-crl",
    "dope-plus",
    "optpess-pd",
    "rpd",
)
"""The online learners' names, in table order (``cmdp_rl.learners.catalog.LEARNERS``)."""

SAFE_ALGORITHMS: tuple[str, ...] = ("optpess", "dope", "safe-crl", "dope-plus", "optpess-pd")
"""The learners that need a safe baseline policy."""

METHODS: tuple[str, ...] = ("fast", "lp")
"""The methods of the exact planner ([`solve`][cmdp_rl.planning.solve.solve]) and of the extended LP
([`solve_elp`][cmdp_rl.planning.elp.solve_elp]): column generation, or HiGHS on the literal LP."""

RADII: tuple[str, ...] = ("paper", "empirical-bernstein")
"""The radius rules: the paper's Lemma 1 and a valid empirical Bernstein bound."""

SAMPLING: tuple[str, ...] = ("adaptive", "fixed")
"""How the sample sizes of certified data were chosen: by the data (learners, logs), or fixed in
advance (a generative model)."""

PG_ALGORITHMS: tuple[str, ...] = ("npg-pd", "crpo")
"""The policy-gradient algorithms of [`run`][cmdp_rl.pg.methods.run]."""

PG_UPDATES: tuple[str, ...] = ("paper", "script")
"""The primal step of [`run`][cmdp_rl.pg.methods.run]: the papers' natural gradient, or the authors' tabular
scripts' ``1e3 *`` policy gradient."""

PG_INITS: tuple[str, ...] = ("uniform", "script")
"""The starting policy of [`run`][cmdp_rl.pg.methods.run]: uniform (``theta = 0``), or the script's random
``theta0``."""

RESULT_STATUSES: tuple[str, ...] = ("optimal", "infeasible", "uncertified", "certified", "baseline")
"""The one vocabulary of every result type's ``status`` (docs page 'Models, results and names'):
``"optimal"`` (a plan whose certified gap is within ``gap_tol``), ``"infeasible"`` (no policy meets
the thresholds), ``"uncertified"`` (no certificate could be given: a planner's gap above ``gap_tol``,
or no policy certified safe), ``"certified"`` (a policy certified safe from data) and ``"baseline"``
(a learner's last episode played its safe baseline by rule)."""

DEPLOY: tuple[str, ...] = ("last", "certified")
"""What a learner's run hands over ([`deployed`][cmdp_rl.learners.deploy.deployed]): the last policy
played, or the best policy certified safe from the run's data."""

PLAY: tuple[str, ...] = ("auto", "table", "mixture")
"""How a learner plays its plans ([`OnlineLearner.configure_play`][cmdp_rl.learners.base.OnlineLearner.configure_play]):
``"table"`` the randomized Markov ``(H, S, A)`` table of each plan, ``"mixture"`` the plan's
deterministic columns, one drawn per episode with its weight (the compact form, no table), ``"auto"``
tables while they fit in the memory limit, else mixtures."""

BACKENDS: tuple[str, ...] = ("local", "ray")
"""Execution backends of the experiments: local processes, or Ray tasks."""

__all__ = [
    "BACKENDS",
    "DEPLOY",
    "METHODS",
    "ONLINE_ALGORITHMS",
    "PG_ALGORITHMS",
    "PG_INITS",
    "PG_UPDATES",
    "PLAY",
    "RADII",
    "RESULT_STATUSES",
    "SAFE_ALGORITHMS",
    "SAMPLING",
]
