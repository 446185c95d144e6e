"""Every single-agent preset on CUDA: its training and test agents act on a hand-built CPU
State (and a CPU StateArray for parallel presets); a short run of each trains on CUDA."""
import sys
import time
import traceback

import torch

from looprl.core import State, StateArray
from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.presets import classic_control, continuous

device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
cart, pend = GymEnvironment("CartPole-v1"), GymEnvironment("Pendulum-v1")
names = [(classic_control, n, cart) for n in ("a2c", "c51", "ddqn", "dqn", "ppg", "ppo", "rainbow",
                                                "vac", "vpg", "vqn", "vsarsa")]
names += [(continuous, n, pend) for n in ("ddpg", "ppo", "sac", "td3")]
bad = 0
for module, name, env in names:
    start = time.time()
    try:
        builder = getattr(module, name)
        preset = builder.env(env).device(device).build()
        obs = torch.zeros(env.state_space.shape)
        n = getattr(preset, "n_envs", None)
        state = State({"observation": obs}) if n is None else StateArray(
            {"observation": obs.expand(n, *obs.shape).clone()}, (n,))
        for agent in (preset.agent(), preset.test_agent()):
            action = agent.act(state)
        ex = make_experiment(preset, env, train_steps=600, logdir="/tmp/cudaruns", quiet=True,
                             verbose=False, seed=0)
        ex.train(frames=600)
        returns = ex.test(episodes=2)
        model = getattr(preset, "model", None) or preset.agent().policy.module
        where = {p.device.type for p in model.parameters()}
        print(f"ok   {module.__name__.split('.')[-1]}.{name}: params on {where}, action "
              f"{type(action).__name__}, test {returns} ({time.time() - start:.1f}s)")
    except Exception:
        bad += 1
        print(f"FAIL {module.__name__.split('.')[-1]}.{name}:\n{traceback.format_exc()[-1500:]}")
print("cuda_act failures:", bad)
