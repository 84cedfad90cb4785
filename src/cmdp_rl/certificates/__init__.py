"""Certificates from data: how good and how safe a policy is for every plausible kernel
([`certify`][cmdp_rl.certificates.certify.certify]), and the best policy the data can certify safe
([`solve_safe`][cmdp_rl.certificates.safe.solve_safe])."""
