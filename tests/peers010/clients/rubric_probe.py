"""Exercise ``openenv.core.rubrics`` and print one JSON line per case (run under ours and 0.10)."""

import asyncio
import json
from types import SimpleNamespace

from openenv.core.rubrics import (
    ExponentialDiscountingTrajectoryRubric,
    Gate,
    Rubric,
    RubricDict,
    RubricList,
    Sequential,
    TrajectoryRubric,
    WeightedSum,
)

log = []


class Const(Rubric):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, action, observation):
        log.append(f"const:{self.value}")
        return self.value


class AsyncConst(Rubric):
    def __init__(self, value):
        super().__init__()
        self.value = value

    async def forward(self, action, observation):
        log.append(f"async:{self.value}")
        return self.value


class Outcome(ExponentialDiscountingTrajectoryRubric):
    def score_trajectory(self, trajectory):
        return 1.0 if trajectory[-1][1].metadata.get("won") else 0.25


class Equal(TrajectoryRubric):
    def score_trajectory(self, trajectory):
        return len(trajectory) / 10

    def compute_step_rewards(self):
        return [self.score_trajectory(self._trajectory)] * len(self._trajectory)


class Multi(Rubric):
    def __init__(self):
        super().__init__()
        self.games = RubricDict({"a": Const(0.2), "b": Const(0.8)})
        self.extra = RubricList([Const(0.1), Gate(Const(0.4), threshold=0.5)])

    def forward(self, action, observation):
        return self.games[observation.game](action, observation) + self.extra[1](action, observation)


def hooked(rubric, name):
    rubric.register_forward_pre_hook(lambda r, a, o: log.append(f"pre:{name}"))
    rubric.register_forward_hook(lambda r, a, o, s: log.append(f"post:{name}:{s}"))
    return rubric


def obs(done=False, **meta):
    return SimpleNamespace(done=done, metadata=meta, game=meta.get("game", "a"))


def case(name, fn):
    log.clear()
    try:
        value = fn()
    except Exception as exc:  # noqa: BLE001 - the error's type and message are the result
        value = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"case": name, "value": value, "log": list(log)}, sort_keys=True))


def tree(r):
    return [[n, type(c).__name__, c.last_score] for n, c in r.named_rubrics()]


seq = hooked(Sequential(hooked(Gate(Const(0.7), threshold=0.5), "gate"), WeightedSum([Const(1.0), Const(0.5)], [0.6, 0.4])), "seq")
case("sequential", lambda: [seq(None, obs()), tree(seq)])
case("sequential_fail_fast", lambda: Sequential(Const(0.0), Const(1.0))(None, obs()))
case("gate_below", lambda: Gate(Const(0.3), threshold=0.5)(None, obs()))
case("empty_sequential", lambda: Sequential()(None, obs()))
case("weights_mismatch", lambda: WeightedSum([Const(1.0)], [0.5, 0.5]))
case("weights_sum", lambda: WeightedSum([Const(1.0), Const(1.0)], [0.5, 0.6]))
case("rubric_list_forward", lambda: RubricList([Const(1.0)])(None, obs()))
m = Multi()
case("multi", lambda: [m(None, obs(game="b")), tree(m), m.get_rubric("games.b").last_score, sorted(m.games.keys())])
case("get_rubric_missing", lambda: m.get_rubric("games.zzz"))


def trajectory_case():
    r = Outcome(gamma=0.5, intermediate_reward=0.1)
    rewards = [r(i, obs()) for i in range(3)] + [r(3, obs(done=True, won=True))]
    out = [rewards, r.compute_step_rewards(), len(r.trajectory), r.state_dict()]
    r.reset()
    return out + [len(r.trajectory), r.compute_step_rewards()]


case("trajectory", trajectory_case)
case("equal_trajectory", lambda: [[Equal()(i, obs(done=i == 2)) for i in range(3)]])
case("bad_gamma", lambda: Outcome(gamma=1.5))


async def async_cases():
    mixed = hooked(WeightedSum([AsyncConst(0.5), Const(1.0)], [0.5, 0.5]), "ws")
    a = await mixed(None, obs())
    seq_async = Sequential(Const(0.9), AsyncConst(0.6), Const(0.3))
    b = await seq_async(None, obs())
    gate_async = Gate(AsyncConst(0.2), threshold=0.5)
    c = await gate_async(None, obs())
    in_loop = Sequential(Const(0.4))(None, obs())
    kind = type(in_loop).__name__
    d = await in_loop if asyncio.iscoroutine(in_loop) else in_loop
    zero_in_loop = Sequential(Const(0.0))(None, obs())
    return [a, b, c, kind, d, type(zero_in_loop).__name__, seq_async.last_score]


case("async", lambda: asyncio.run(async_cases()))
