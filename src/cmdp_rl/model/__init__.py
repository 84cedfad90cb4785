"""The model: the CMDP ``M = <S, A, P, r, c, c_bar, s0, H>`` (dense or sparse kernel), its files,
transition tables and logged transitions."""

from cmdp_rl.model.cmdp import CMDP

__all__ = ["CMDP"]
