"""OptunaRunner: resumable studies, pruning, the search space's errors, optional Optuna."""

from __future__ import annotations

import importlib
import sys

import pytest

import looprl.runners
from helpers import leaves_global_random_numbers

optuna = pytest.importorskip("optuna")

from looprl.runners import OptunaRunner, SearchSpaceError  # noqa: E402

SPACE = {
    "lr": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True},
    "n_steps": {"type": "int", "low": 8, "high": 32},
    "clip": {"type": "categorical", "choices": [0.1, 0.2]},
}


@pytest.fixture(autouse=True)
def _quiet_optuna():
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    yield
    optuna.logging.set_verbosity(verbosity)


def _runner(builder, storage, **kwargs):
    defaults = dict(n_trials=2, num_steps=128, n_evaluations=2, eval_episodes=1, seed=0,
                    storage=storage)
    return OptunaRunner(builder, "CartPole-v1", SPACE, **{**defaults, **kwargs})


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_a_study_resumes_from_its_storage(small_ppo, tmp_path, kind):
    storage = f"sqlite:///{tmp_path / 'search.db'}" if kind == "sqlite" else tmp_path / "j.log"
    first, _ = _runner(small_ppo, storage).run()
    assert first["step"] == 2
    results, eval_results = _runner(small_ppo, storage).run()  # a new runner, same storage
    assert results["step"] == 4 and [h["number"] for h in results["history"]] == [0, 1, 2, 3]
    assert len(optuna.load_study(study_name="looprl", storage=str(storage) if kind == "sqlite"
                                 else _runner(small_ppo, storage)._storage()).trials) == 4
    values = [h["values"] for h in results["history"]]
    assert values[:2] == [h["values"] for h in first["history"]]
    assert values[2] not in values[:2]  # the resumed sampler does not repeat the first trials
    best = results["best"]
    assert best["value"] == max(h["value"] for h in results["history"])
    assert 1e-4 <= best["values"]["lr"] <= 1e-2 and best["values"]["clip"] in (0.1, 0.2)
    assert eval_results["mean_eval_reward"] >= 1


def test_a_stored_study_of_another_search_is_one_line(small_ppo, tmp_path):
    """(was: the second search loaded the first's study and reported its trial as its best)"""
    storage = f"sqlite:///{tmp_path / 'search.db'}"
    _runner(small_ppo, storage, n_trials=1, n_evaluations=1, num_steps=64).run()
    other = OptunaRunner(small_ppo, "CartPole-v1", {"lr": SPACE["lr"]}, n_trials=1,
                         num_steps=64, n_evaluations=1, storage=storage, seed=0)
    with pytest.raises(ValueError, match=r"^OptunaRunner's study 'looprl' in 'sqlite:///.*' "
                                         r"searched ppo on CartPole-v1 over another space; this "
                                         r"search is ppo on CartPole-v1 over lr: give it a study "
                                         r"of its own \(study_name=NAME"):
        other.run()
    assert len(optuna.load_study(study_name="looprl", storage=storage).trials) == 1


def test_trials_are_pruned_from_their_intermediate_evaluations(small_ppo, tmp_path):
    storage = f"sqlite:///{tmp_path / 'pruned.db'}"
    results, eval_results = _runner(small_ppo, storage, n_evaluations=4,
                                    pruner=optuna.pruners.ThresholdPruner(lower=1e9)).run()
    assert [h["state"] for h in results["history"]] == ["PRUNED", "PRUNED"]
    assert all(h["step"] < 128 for h in results["history"])  # stopped after the first chunk
    assert results["best"] is None and eval_results == {}
    study = optuna.load_study(study_name="looprl", storage=storage)
    assert len(study.trials[0].intermediate_values) == 1


def test_the_preset_values_reach_the_agent(small_ppo):
    runner = _runner(small_ppo, None, n_trials=1, n_evaluations=1,
                     sampler=optuna.samplers.RandomSampler(seed=1))
    seen = []
    train = runner.train

    def record(num_steps):
        seen.append((runner.preset.hyperparameters["n_steps"],
                     runner.hyperparameters()["hp/lr"].get()))
        return train(num_steps)

    runner.train = record
    results, _ = runner.run()
    values = results["history"][0]["values"]
    assert seen[0][0] == values["n_steps"]
    assert seen[0][1] == pytest.approx(values["lr"])  # before annealing starts


@pytest.mark.parametrize("space, message", [
    ({"lr": {"type": "float", "low": 1e-2, "high": 1e-2}}, "empty range, low"),
    ({"lr": {"type": "normal", "low": 0, "high": 1}},
     "unknown type 'normal'. Valid: categorical, float, int"),
    ({"learning_rate": {"type": "float", "low": 0, "high": 1}},
     "'learning_rate' is not a hyperparameter of ppo. Did you mean 'lr' \\(Mighty's "
     "'learning_rate'\\)\\? Valid: .*clip.*lr.*n_steps"),
    ({"n_units": (8, 64)}, "Did you mean 'hidden' \\(Mighty's 'n_units'\\)"),
    ({"n_steps": {"type": "float", "low": 8, "high": 32}}, "int hyperparameter"),
    ({"lr": {"type": "float", "lo": 0, "high": 1}}, "unknown key 'lo'; valid keys"),
    ({"lr": {"type": "float", "low": 0.0, "high": 1.0, "log": True}}, "needs low > 0"),
    ({"clip": {"type": "categorical", "choices": []}}, "non-empty list of 'choices'"),
    # a bad step was Optuna's error at run(), or an int range's 2.5 silently made 2
    ({"lr": {"low": 1e-4, "high": 1e-2, "log": True, "step": 1e-4}}, "log range takes no step"),
    ({"clip": {"type": "float", "low": 0.1, "high": 0.3, "step": 0}}, "step must be a number > 0"),
    ({"clip": {"type": "float", "low": 0.1, "high": 0.3, "step": "0.1"}}, "step must be a number"),
    ({"clip": {"type": "float", "low": 0.1, "high": 0.3, "step": 0.5}}, "wider than the range"),
    ({"n_steps": {"type": "int", "low": 16, "high": 64, "step": 2.5}}, "needs an int step"),
    ({"clip": {"type": "float", "low": 0.1, "high": 0.3, "log": "no"}}, "log must be true or"),
    # values the hyperparameter cannot take failed the search at the first trial drawn there
    ({"lr": (-1e-3, 1e-2)}, "'lr': lr must be >= 0"),
    ({"n_steps": {"type": "int", "low": 0, "high": 32}}, "n_steps must be a whole number >= 1"),
    ({"clip": {"type": "categorical", "choices": [0.1, -0.2]}}, "clip must be >= 0.*-0.2"),
    ({"hp/clip": (-0.1, 0.3)}, "hp/clip must be >= 0"),
])
def test_bad_search_spaces_are_one_line_errors(small_ppo, space, message):
    with pytest.raises(SearchSpaceError, match=message) as info:
        OptunaRunner(small_ppo, "CartPole-v1", space)
    assert "\n" not in str(info.value)


def test_a_choice_the_preset_cannot_take_is_refused_before_the_first_trial(small_ppo):
    # was: the study started, and the search failed at the first trial that drew the choice
    space = {"exploration": {"type": "categorical", "choices": ["stochastic", "ez_greedy"]}}
    with pytest.raises(ValueError, match="ppo cannot use the exploration 'ez_greedy'"):
        OptunaRunner(small_ppo, "CartPole-v1", space)
    space = {"update": {"type": "categorical", "choices": ["ppo", "ppoo"]}}
    with pytest.raises(ValueError, match="Unknown update 'ppoo'"):
        OptunaRunner(small_ppo, "CartPole-v1", space)


@pytest.mark.parametrize("n_evaluations", ["abc", 2.5, 0, 129])
def test_n_evaluations_is_a_whole_number_up_to_num_steps(small_ppo, n_evaluations):
    # 'abc' was "invalid literal for int()", naming no option; 2.5 silently made 2
    with pytest.raises(ValueError, match="n_evaluations must be"):
        OptunaRunner(small_ppo, "CartPole-v1", SPACE, num_steps=128, n_evaluations=n_evaluations)


def test_a_storage_it_cannot_open_is_one_line(small_ppo, tmp_path):
    # SQLAlchemy's error (a folder that does not exist) was a traceback from looprl run, then
    # SQLAlchemy's line, which named neither the storage nor what to give
    from looprl.core.suggest import is_bad_input
    for storage in (f"sqlite:///{tmp_path / 'missing' / 'search.db'}", "bogus://x",
                    tmp_path / "missing" / "j.log"):
        with pytest.raises(ValueError, match="^OptunaRunner cannot open its storage .*: give a "
                                             "database URL it can open") as info:
            _runner(small_ppo, storage).run()
        assert is_bad_input(info.value) and "\n" not in str(info.value)


def test_bad_sampler_or_pruner_names(small_ppo):
    with pytest.raises(ValueError, match="Unknown pruner 'mean'; valid: .*median"):
        OptunaRunner(small_ppo, "CartPole-v1", SPACE, pruner="mean")
    with pytest.raises(ValueError, match="Unknown sampler 'cmaes'; valid: random, tpe"):
        OptunaRunner(small_ppo, "CartPole-v1", SPACE, sampler="cmaes")
    # neither a name nor an Optuna object (looprl run runner.pruner=5) was an AttributeError
    # ("'int' object has no attribute 'prune'") after the first trial had trained
    for kind in ("sampler", "pruner"):
        with pytest.raises(TypeError, match=f"^{kind} is a name \\(.*\\) or an Optuna {kind} "
                                            "object, got 5$"):
            OptunaRunner(small_ppo, "CartPole-v1", SPACE, **{kind: 5})


def test_runners_import_without_optuna_and_say_how_to_install_it(small_ppo, monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)  # `import optuna` now fails
    monkeypatch.setattr(looprl, "runners", looprl.runners)  # restored with the modules
    for name in [n for n in sys.modules if n.startswith("looprl.runners")]:
        monkeypatch.delitem(sys.modules, name)
    runners = importlib.import_module("looprl.runners")
    with pytest.raises(ImportError, match=r"pip install looprl\[hpo\]"):
        runners.OptunaRunner(small_ppo, "CartPole-v1", SPACE)


def test_the_default_tpe_sampler_is_seeded(small_ppo):
    runs = [leaves_global_random_numbers(  # (and the caller's random numbers go on)
        _runner(small_ppo, None, num_steps=64, n_evaluations=1).run)[0]["history"]
        for _ in range(2)]
    assert runs[0] == runs[1]


def test_the_retrained_best_is_the_best_trials_agent(small_ppo):
    # was one chunk of num_steps: 61 steps, where the trial's chunks, each rounded up to the
    # end of a step of 4 envs, reached 65 and the PPO update at 64
    results, eval_results = _runner(small_ppo, None, n_trials=1, num_steps=58,
                                    n_evaluations=4, eval_episodes=2).run()
    best = results["history"][results["best"]["trial"]]
    assert eval_results["step"] == best["step"] == 65
    assert eval_results["mean_eval_reward"] == best["value"]


def test_an_environment_that_returns_nan_stops_the_study_in_one_line(small_ppo) -> None:
    """(Was: each trial failed as diverged, and the study ended with exit code 0 and no best.)"""
    from tests.experiments.test_diagnose import Corrupt

    from looprl.environments import GymEnvironment
    from looprl.experiments.diagnose import DataDivergence

    env = GymEnvironment(Corrupt("reward", after=20), name="NaNCartPole")
    runner = OptunaRunner(small_ppo, env, search_space={
        "lr": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True}}, n_trials=2,
        num_steps=128, eval_episodes=1)
    with pytest.raises(DataDivergence, match=r"The environment NaNCartPole returned NaN"):
        runner.run()


def test_the_study_is_created_without_optunas_info_line(small_ppo, monkeypatch):
    """(Was: "[I ...] A new study created in memory with name: looprl" in every search's
    output, in Optuna's own format.) Optuna's verbosity is the user's again after."""
    optuna.logging.set_verbosity(optuna.logging.INFO)
    create, seen = optuna.create_study, []

    def recorded(**kwargs):
        seen.append(optuna.logging.get_verbosity())
        return create(**kwargs)

    monkeypatch.setattr(optuna, "create_study", recorded)
    _runner(small_ppo, None).study()
    assert seen == [optuna.logging.WARNING]
    assert optuna.logging.get_verbosity() == optuna.logging.INFO


def test_the_best_values_last_evaluation_is_played_once(small_ppo, monkeypatch):
    """(Was twice: after the best values' last training chunk, then as the search's result,
    at the same step.) One trial of two chunks, then its values again: four evaluations."""
    from looprl.runners.base import Runner

    evaluate, steps = Runner.evaluate, []

    def counted(self, *args, **kwargs):
        steps.append(self.experiment.frame)
        return evaluate(self, *args, **kwargs)

    monkeypatch.setattr(Runner, "evaluate", counted)
    _, eval_results = _runner(small_ppo, None, n_trials=1).run()
    assert len(steps) == 4 and steps[:2] == steps[2:] and eval_results["step"] == steps[-1]
