"""Gymnasium imports against an independent conversion written here, loop by loop over Gymnasium's ``P``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from scipy.optimize import linprog

from cmdp_rl import CMDPInputError, evaluate, solve
from cmdp_rl.envs.gymnasium_import import from_gymnasium, to_original_units
from cmdp_rl.envs.registry import make


def independent(env_id: str, H: int, cost_of, **kw):
    """P, r (mapped), c, s0, lo, hi, entry by entry."""
    raw = gym.make(env_id, **kw).unwrapped
    S, A = raw.observation_space.n, raw.action_space.n
    rewards = [o[2] for s in range(S) for a in range(A) for o in raw.P[s][a]]
    lo, hi = min([0.0, *rewards]), max([0.0, *rewards])
    if lo >= 0 and hi <= 1:
        lo, hi = 0.0, 1.0
    terminal = set()
    P = np.zeros((S, A, S))
    r = np.zeros((S, A))
    c = np.zeros((S, A))
    for s in range(S):
        for a in range(A):
            for prob, s2, rew, term in raw.P[s][a]:
                P[s, a, s2] += prob
                r[s, a] += prob * (rew - lo) / (hi - lo)
                c[s, a] += prob * cost_of(raw, s, a, s2, rew)
                if term:
                    terminal.add(s2)
    for s in terminal:
        for a in range(A):
            P[s, a] = 0.0
            P[s, a, s] = 1.0
            r[s, a] = (0.0 - lo) / (hi - lo)
            c[s, a] = 0.0
    init = raw.initial_state_distrib
    if np.count_nonzero(init) > 1:
        P2 = np.zeros((S + 1, A, S + 1))
        P2[:S, :, :S] = P
        for a in range(A):
            P2[S, a, :S] = init
        P = P2
        r = np.vstack([r, np.full((1, A), -lo / (hi - lo))])
        c = np.vstack([c, np.zeros((1, A))])
        s0 = S
    else:
        s0 = int(np.argmax(init))
    return P, r, c, s0, lo, hi


def hole(raw, s, a, s2, rew):
    return float(raw.desc.ravel()[s2] == b"H")


CASES = [
    ("FrozenLake-v1", "hole", hole, {"map_name": "4x4", "is_slippery": True}),
    ("FrozenLake-v1", "hole", hole, {"map_name": "4x4", "is_slippery": False}),
    ("FrozenLake-v1", "hole", hole, {"map_name": "8x8", "is_slippery": True}),
    ("CliffWalking-v1", "cliff", lambda raw, s, a, s2, rew: float(rew == -100), {"is_slippery": True}),
    ("CliffWalking-v1", "cliff", lambda raw, s, a, s2, rew: float(rew == -100), {}),
    ("Taxi-v4", "illegal", lambda raw, s, a, s2, rew: float(rew == -10), {}),
    ("Taxi-v4", "illegal", lambda raw, s, a, s2, rew: float(rew == -10), {"is_rainy": True}),
]


@pytest.mark.parametrize("env_id, cost, cost_of, kw", CASES)
def test_import_equals_independent_conversion(env_id: str, cost: str, cost_of, kw) -> None:
    m = from_gymnasium(env_id, 7, cost=cost, c_bar=0.2, **kw)
    P, r, c, s0, lo, hi = independent(env_id, 7, cost_of, **kw)
    assert m.s0 == s0 and m.P.shape == P.shape
    assert np.allclose(m.P, P, atol=1e-12) and np.allclose(m.r, r, atol=1e-12) and np.allclose(m.c[0], c, atol=1e-12)
    assert m.meta["reward_map"] == {"lo": lo, "hi": hi}


def test_taxi_has_an_added_start_state() -> None:
    m = from_gymnasium("Taxi-v4", 10, cost="illegal", c_bar=0.1)
    raw = gym.make("Taxi-v4").unwrapped
    assert m.S == 501 and m.s0 == 500
    assert np.allclose(m.P[500, 3, :500], raw.initial_state_distrib)
    assert m.c[0, 500].tolist() == [0.0] * 6


def _dense_value(m) -> float:
    """Occupation LP built entry by entry (independent of the library's builder)."""
    H, S, A = m.H, m.S, m.A
    n = H * S * A
    A_eq = np.zeros((H * S, n))
    b_eq = np.zeros(H * S)
    for h in range(H):
        for s in range(S):
            for a in range(A):
                A_eq[h * S + s, (h * S + s) * A + a] = 1.0
                if h + 1 < H:
                    for s2 in range(S):
                        A_eq[(h + 1) * S + s2, (h * S + s) * A + a] -= m.P[s, a, s2]
    b_eq[m.s0] = 1.0
    obj = -np.tile(m.r.ravel(), H)
    A_ub = np.tile(m.c[0].ravel(), H)[None]
    res = linprog(obj, A_ub=A_ub, b_ub=m.c_bar, A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs-ipm")
    return float(-res.fun)


@pytest.mark.parametrize("threshold", [0.01, 0.05, 0.2])
def test_frozenlake_optimum_against_an_independent_lp(threshold: float) -> None:
    m = make(f"frozenlake4x4-hole:c_bar={threshold}")
    assert solve(m).value == pytest.approx(_dense_value(m), rel=1e-6, abs=1e-9)


def test_values_in_original_units() -> None:
    m = from_gymnasium("CliffWalking-v1", 15, cost="cliff", c_bar=0.5, is_slippery=True)
    pol = solve(m).policy
    # the same policy's expected total reward in Gymnasium's units, by backward induction on the raw P
    raw = gym.make("CliffWalking-v1", is_slippery=True).unwrapped
    S, A = raw.observation_space.n, raw.action_space.n
    V = np.zeros(S)
    done = np.zeros(S, dtype=bool)
    for s in range(S):
        for a in range(A):
            for _, s2, _, term in raw.P[s][a]:
                done[s2] |= term
    for h in range(m.H - 1, -1, -1):
        Vn = np.zeros(S)
        for s in range(S):
            if done[s]:
                continue
            for a in range(A):
                q = sum(p * (rw + (0.0 if t else V[s2])) for p, s2, rw, t in raw.P[s][a])
                Vn[s] += pol[h, s, a] * q
        V = Vn
    assert to_original_units(evaluate(m, pol).value, m) == pytest.approx(V[m.s0], rel=1e-9)


def test_refusals() -> None:
    with pytest.raises(CMDPInputError, match="fickle_passenger"):
        from_gymnasium("Taxi-v4", 10, cost="illegal", c_bar=0.1, fickle_passenger=True)
    with pytest.raises(CMDPInputError, match="no tabular model"):
        from_gymnasium("CartPole-v1", 10)
    with pytest.raises(CMDPInputError, match=r"cost: .* named costs: \['hole'\]"):
        from_gymnasium("FrozenLake-v1", 10, cost="cliff", c_bar=0.1)
    with pytest.raises(CMDPInputError, match="c_bar: required"):
        from_gymnasium("FrozenLake-v1", 10, cost="hole")
    with pytest.raises(CMDPInputError, match=r"^H: "):
        from_gymnasium("FrozenLake-v1", 0)
    m = from_gymnasium("FrozenLake-v1", 5, cost=lambda s, a, s2: float(s2 == 15), c_bar=0.5)
    assert m.N == 1 and m.c.max() <= 1
