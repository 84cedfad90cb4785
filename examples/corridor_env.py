"""The corridor of docs/simulators.md as a module: ``cmdp-rl learn --env examples.corridor_env:Corridor``."""

import gymnasium as gym


class Corridor(gym.Env):
    """Five cells; "right" moves on with probability 0.8 and costs 0.5, "stay" is free.
    Reward 1 per step in the last cell. Episodes start in cell 0 or 1."""

    observation_space = gym.spaces.Discrete(5)
    action_space = gym.spaces.Discrete(2)  # 0 = stay, 1 = right

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.s = int(self.np_random.integers(2))
        return self.s, {}

    def step(self, a):
        cost = 0.5 if a == 1 else 0.0
        if a == 1 and self.np_random.random() < 0.8:
            self.s = min(self.s + 1, 4)
        reward = 1.0 if self.s == 4 else 0.0
        return self.s, reward, False, False, {"cost": cost}
