"""Learning checks for continuous control on Pendulum-v1 (short, seeded runs).

A random policy scores about -1200 on Pendulum-v1 (200 steps, reward in [-16.3, 0]);
-400 means the pendulum is swung up and balanced from most starts, -200 is "solved".
The agent is evaluated (deterministic test agent, 10 episodes) periodically and passes
when an evaluation reaches the bar within budget. The trained off-policy agents are then
saved, loaded and evaluated (``check_pendulum_round_trip``), as PPO's is in
``tests/agents/test_continuous.py``.

The off-policy checks use 64x64 networks instead of the presets' 256x256 ones: they learn
just as fast per step on Pendulum and cost a quarter of the time on one CPU thread. SAC's
actor and critic learning rates are 3e-3 (not 1e-3): it swings up by frame 3,000 instead of
4,000. PPO learns at 3e-3 too (not 1e-3): it gets there by frame 24,576 instead of 49,152.
"""

from __future__ import annotations

import pytest

from helpers import check_pendulum_round_trip, replay_episodes
from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.experiment import seed_everything
from looprl.presets.continuous import ddpg, ppo, sac, td3


def _evaluate_until(preset, env, frames, eval_every, bar, logdir, seed=1, then=None):
    """The evaluations (10 episodes each) every ``eval_every`` frames until one passes
    ``bar``; ``then(experiment)`` runs before the experiment closes."""
    experiment = make_experiment(
        preset, env, train_steps=frames, logdir=logdir, quiet=True, verbose=False, seed=seed
    )
    evaluations = [sum(experiment.test(episodes=10)) / 10]
    for target in range(eval_every, frames + 1, eval_every):
        experiment.train(frames=target)
        evaluations.append(sum(experiment.test(episodes=10)) / 10)
        if evaluations[-1] > bar:
            break
    if then is not None:
        then(experiment)
    experiment.close()
    return evaluations


def _replay_from_seed_7(experiment):
    """The returns of an agent in two fresh episodes after ``reset(seed=7)``, which the
    experiment's next evaluation episodes continue from."""
    def replay(agent):
        experiment.env.reset(seed=7)
        return replay_episodes(agent, "Pendulum-v1", seed=7, episodes=2)

    return replay


#: SAC on minibatches of 64 too, each update cheaper, learning from frame 500 (not 1,000): it
#: swings up by frame 3,000 (seeds 1 and 2; seed 3 by 4,000), not 4,000
FAST_SAC = sac.hyperparameters(lr_actor=3e-3, lr_critic=3e-3, minibatch_size=64,
                               replay_start_size=500)
#: TD3 on minibatches of 64 (not 256): it swings up by frame 5,000 as with 256 (seeds 0 and 2
#: by 7,000), each of its updates (two critics) cheaper
SMALL_TD3 = td3.hyperparameters(minibatch_size=64)
#: DDPG on minibatches of 64 too: it swings up by frame 3,000 as with 256, in 60% of the time
SMALL_DDPG = ddpg.hyperparameters(minibatch_size=64)


@pytest.mark.parametrize("builder", [SMALL_DDPG, FAST_SAC, SMALL_TD3], ids=["ddpg", "sac", "td3"])
def test_off_policy_swings_up_pendulum(builder, tmp_path):
    seed_everything(1)  # before building, so that the initial weights are seeded too
    env = GymEnvironment("Pendulum-v1")
    preset = builder.env(env).device("cpu").hyperparameters(hidden=64).build()

    def saves_loads_and_evaluates(experiment):  # (the trained agent: no second training)
        check_pendulum_round_trip(preset, experiment, str(tmp_path / "preset.pt"),
                                  _replay_from_seed_7(experiment))

    evaluations = _evaluate_until(preset, env, 15_000, 1_000, -400, str(tmp_path),
                                  then=saves_loads_and_evaluates)
    assert evaluations[0] < -900, f"the untrained policy already scores {evaluations[0]}"
    assert max(evaluations) > -400, f"{preset.name} evaluations: {evaluations}"


def test_gaussian_ppo_improves_on_pendulum(tmp_path):
    seed_everything(1)  # before building, so that the initial weights are seeded too
    env = GymEnvironment("Pendulum-v1")
    preset = ppo.env(env).device("cpu").hyperparameters(lr=3e-3).build()
    evaluations = _evaluate_until(preset, env, 65_536, 8_192, -500, str(tmp_path))
    assert max(evaluations[1:]) > evaluations[0] + 500, f"ppo evaluations: {evaluations}"
    assert max(evaluations) > -500, f"ppo evaluations: {evaluations}"
