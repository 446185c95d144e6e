"""The runtime is a switch: ``looprl run ... runtime=ray runtime.actors=1 runtime.sync=true``
gives what ``runtime=local`` gives with the same seed, bit for bit: every episode of
``results.csv``, the trainer's losses (``losses.csv``, at the same frames), the final
evaluation's episodes, the ``hp/*`` values at each episode's end (``hyperparameters.csv``) and the
final parameters. One code path makes
it so: the local loop and the Ray actor run the same collector and policy (seeded alike), the
local run and the trainer
worker the same ``Learner`` (its replay seeded alike; independent learners: one per agent),
and with ``sync`` the actor acts with the parameters a local run acts with. So what the
local learning tests prove (SAC swings Pendulum up, DQN solves CartPole, independent DQN beats
a random tic-tac-toe player) holds for these presets on Ray, and a sync run repeats itself.
Meta components too: RND's bonuses (its networks trained by the trainer and published with the
parameters, which the actor loads before the env step after the rows that completed a segment,
as a local run trains before it), a contextual environment's copies and PLR's level draws, and
``hp/*`` writes across the split (DQN's ``SchedulesAcross``: a step hook's ``hp/lr``, sent
with the actor's segments and set before the trainer draws from them; an update hook's
``hp/epsilon``, published with the parameters and set before the actor acts on them), and
its evaluations on the way (``runner.eval_every``: the actor stops where a local run stops to
evaluate, and the driver evaluates the policy trained up to there), and an env copy that
raises there (rebuilt on both runtimes, ``runtime.max_restarts``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from looprl.configs.app import main
from looprl.experiments.checkpoint import load_checkpoint

pytest.importorskip("ray")

FRAMES = 600  # (PPO on contexts: 4 updates of 4 x 32 frames)


def _run(runtime: str, run_dir: Path, algorithm: list[str], env: str, copies: int,
         frames: int = FRAMES, test_episodes: int = 3, seed: int = 0) -> Path:
    """``looprl run`` of ``algorithm`` on ``env`` for ``frames`` frames (on Ray: one actor of
    the preset's ``copies`` env copies) seeded with ``seed``; its run directory."""
    ray = ["runtime=ray", "runtime.actors=1", "runtime.sync=true",
           f"runtime.envs_per_actor={copies}", "runtime.groups=1"] if runtime == "ray" else [
        f"checkpoint_every={frames}"]
    code = main([*algorithm, f"env={env}", f"frames={frames}", f"seed={seed}",
                 f"test_episodes={test_episodes}", "logging.quiet=true",
                 f"hydra.run.dir={run_dir}", *ray])
    assert code == 0
    (found,) = run_dir.glob("*/*/results.csv")
    return found.parent


def _local_parameters(run: Path, frames: int = FRAMES) -> dict[str, torch.Tensor]:
    experiment = load_checkpoint(run / "checkpoint.pt")  # (saved at the budget's end)
    assert frames <= experiment.frame < frames + 4
    return experiment.agent.unwrapped.policy.module.state_dict()


def _ray_parameters(run: Path) -> dict[str, torch.Tensor]:
    return torch.load(run / "policy.pt", weights_only=True)["state_dict"]


#: a short budget: ``FRAMES``, and where less holds as much, less: DQN trains 8 steps at
#: every 64th frame from 256 (its target every 8th step), SAC (and a sync Ray run waits for its
#: trainer) at every frame from 300, and Pendulum's episodes are 200 frames (two: one before,
#: one after training started); independent DQN's agents each train about 4 times in 300
#: (tic-tac-toe: each agent's learner starts at its 100th row). PPO on contexts with PLR
#: covers PLR's seeded level draws and, with ``test_episodes=0``, the final evaluation's
#: held-out set (played once per instance, as locally); plain PPO, the family alone.
@pytest.mark.parametrize(("algorithm", "env", "copies", "frames", "seed", "test_episodes"), [
    (["algorithm=dqn", "algorithm.replay_start_size=200", "algorithm.hidden=16",
      "algorithm.update_frequency=64", "algorithm.gradient_steps=8",
      "algorithm.target_update_frequency=8", "algorithm.test_exploration=0.5",
      "meta=[rnd,tests.distributed.user_components:SchedulesAcross]", "runner.eval_every=150",
      "env_kwargs.faults={131071:step}"],  # (the copy seeded 131071, the last seed wrapped:
     "tests.distributed.faulty_env:FaultyCartPole", 1, 400, 2**32 - 1,  # its step 3 raises)
     3),  # (evaluation draws; the last seed, wrapped alike: see the docstring)
    (["algorithm=continuous/sac", "algorithm.replay_start_size=300", "algorithm.hidden=16",
      "algorithm.minibatch_size=32"], "Pendulum-v1", 1, 400, 0, 3),
    (["algorithm=multiagent/dqn", "algorithm.replay_start_size=100",
      "algorithm.test_exploration=0.5", "meta=[rnd]"], "tictactoe_v3", 1, 300,
     0, 3),  # (agents' draws)
    (["algorithm=ppo", "algorithm.n_envs=4", "algorithm.n_steps=32", "algorithm.hidden=16",
      "algorithm.minibatch_size=32", "meta=[plr]", "context.train=6", "context.test=2",
      "++context.ranges.length=[0.2,0.8]"], "CartPole-v1", 4, FRAMES,
     0, 0),  # (PLR's levels, seeded; the held-out set)
    (["algorithm=ppo", "algorithm.n_envs=4", "algorithm.n_steps=32", "algorithm.hidden=16",
      "algorithm.minibatch_size=32"], "CartPole-v1", 4, FRAMES, 0, 3),
    # a user's SRL environment whose copy 1 raises: the same vector of views rebuilt whole
    # on both (was: locally all copies, on Ray the one, other episodes from there)
    (["algorithm=ppo", "algorithm.n_envs=4", "algorithm.n_steps=32", "algorithm.hidden=16",
      "algorithm.minibatch_size=32", "env_kwargs.faults={1:step}"],
     "tests.distributed.faulty_env:FaultySRLCartPole", 4, FRAMES, 0, 3),
], ids=["dqn", "sac", "multiagent_dqn", "ppo_on_contexts_with_plr", "ppo", "ppo_on_srl_faults"])
def test_one_synchronous_ray_actor_gives_the_local_run_bit_for_bit(local_ray, tmp_path,
                                                                    algorithm, env, copies,
                                                                    frames, seed,
                                                                    test_episodes) -> None:
    """... with every accepted seed (``dqn``'s is the last): a Ray actor seeds its units, hooks
    and env copies with ``wrapped_seed`` of the run's seed, as a local run does. (Was: from
    2**31 - 2**16 up the local run seeded its actor, learner and RND with the seed as given,
    the Ray actor with it wrapped: other episodes from the first, other parameters.)

    ``test_episodes=0`` still plays each held-out instance once, as locally, and writes the
    same ``results.json`` evaluation and ``test_returns.csv``. (Was: a Ray run skipped its
    final evaluation: no held-out returns, no ``test_returns.csv``, no ``step``.)"""
    local = _run("local", tmp_path / "local", algorithm, env, copies, frames, test_episodes,
                 seed)
    ray = _run("ray", tmp_path / "ray", algorithm, env, copies, frames, test_episodes, seed)
    episodes = (local / "results.csv").read_text()
    assert len(episodes.splitlines()) > 2  # (episodes before and after training started)
    assert (ray / "results.csv").read_text() == episodes
    for agent in local.glob(f"{local.parent.name}.*"):  # (multi-agent: each agent's returns,
        for returns in ("results.csv", "test_returns.csv"):  # in training and evaluation)
            mine = (agent / local.name / returns).read_text()
            assert (ray / agent.name / local.name / returns).read_text() == mine
    # the trainer's losses at a local run's frames (was: at its count of transitions, which
    # counts the rows that start an episode: 256 where locally the frame was 246; an agent's:
    # its own rows only)
    losses = sorted(local.glob("**/losses.csv"))
    assert losses
    for mine in losses:
        assert (ray / mine.relative_to(local)).read_text() == mine.read_text()
    # the hp/* values at each episode's end (was: on Ray a row each time the driver read the
    # trainer's statistics, at the frame it had then)
    rows = (local / "hyperparameters.csv").read_text().splitlines()
    assert len(rows) == len(episodes.splitlines()) and rows[0].startswith("frame,hp/")
    assert (ray / "hyperparameters.csv").read_text().splitlines() == rows
    results = {side: json.loads((tmp_path / side / "results.json").read_text())
               for side in ("local", "ray")}
    trained, local_train = results["ray"]["train"], results["local"]["train"]
    assert trained["train_steps"] > 0  # (the parameters moved on both)
    # results.json: a local run's keys, with the same values (its episodes, frames, mean; an
    # env copy that raised: rebuilt on both, ``runtime.max_restarts``, where and at which frame)
    assert {key: trained[key] for key in local_train if key != "wall_time"} == {
        key: value for key, value in local_train.items() if key != "wall_time"}
    faults = "faults" in str(algorithm)  # (a vector of SRL views: rebuilt whole, "env")
    assert [where for where, _ in local_train["restarts"]] == (
        [] if not faults else ["actor0/env"] if "SRL" in env else ["actor0/copy0"])
    # the final evaluation: the same episodes (its actor and env resets seeded alike)
    assert results["ray"]["eval"] == results["local"]["eval"]
    if not test_episodes:  # (each of the 2 held-out instances once)
        assert results["local"]["eval"]["test_set"]["episodes"] == 2
    assert (ray / "test_returns.csv").read_text() == (local / "test_returns.csv").read_text()
    if "runner.eval_every=150" in algorithm:  # (at 150, 300 and the last frame, the actor
        evaluated = (tmp_path / "local" / "eval_results.csv").read_text()  # stopped there)
        assert len(evaluated.splitlines()) == 4, evaluated
        assert (tmp_path / "ray" / "eval_results.csv").read_text() == evaluated
    mine, theirs = _local_parameters(local, frames), _ray_parameters(ray)
    assert mine.keys() == theirs.keys()
    assert all(torch.equal(mine[key], theirs[key]) for key in mine)

