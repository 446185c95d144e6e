"""ESRunner: searched hyperparameters and parameters reach the agent; bad inputs are errors."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import leaves_global_random_numbers
from looprl.runners import ESRunner, SearchSpaceError


def _es(builder, **kwargs):
    defaults = dict(iterations=2, popsize=4, num_steps_per_iteration=64, eval_episodes=1,
                    seed=0, strategy="openai", sigma=0.3)
    return ESRunner(builder, "CartPole-v1", **{**defaults, **kwargs})


def test_apply_parameters_puts_the_vector_into_the_model(small_ppo):
    runner = _es(small_ppo, search_params=True, train_agent=False)
    vector = np.random.default_rng(0).standard_normal(runner.n_params)
    runner.apply_parameters(vector)
    assert runner.parameter_vector() == pytest.approx(vector, abs=1e-6)
    model_vector = np.concatenate([p.detach().numpy().ravel()
                                   for p in runner.preset.model.parameters()])
    assert model_vector == pytest.approx(vector, abs=1e-6)
    with pytest.raises(ValueError, match=f"has {runner.n_params} parameters"):
        runner.apply_parameters(vector[:-1])


def test_integer_targets_are_ints_clipped_to_their_bounds(small_ppo):
    runner = _es(small_ppo, search_targets={"minibatch_size": (16, 128),
                                            "lr": (1e-4, 1e-2, "log")})
    assert list(runner.search_targets) == ["minibatch_size", "lr"]  # (Mighty's ES loop's)
    for units, expected in (([-3.0, -3.0], (16, 1e-4)), ([7.0, 7.0], (128, 1e-2)),
                            ([0.5, 0.5], (72, 1e-3))):
        _, values = runner.decode(np.array(units))
        assert type(values["minibatch_size"]) is int
        assert values["minibatch_size"] == expected[0]
        assert values["lr"] == pytest.approx(expected[1])


def test_a_step_puts_the_values_on_its_grid(small_ppo):
    # the spec's "step" (Optuna's grid) was ignored: ES searched any value in the range
    runner = _es(small_ppo, search_targets={
        "minibatch_size": {"type": "int", "low": 16, "high": 64, "step": 16},
        "hp/clip": {"type": "float", "low": 0.1, "high": 0.35, "step": 0.1}})
    for unit in np.linspace(-0.5, 1.5, 41):
        _, values = runner.decode(np.array([unit, unit]))
        assert values["minibatch_size"] in (16, 32, 48, 64)
        assert values["hp/clip"] in (0.1, 0.2, 0.3)
    _, values = runner.decode(np.array([1.0, 1.0]))
    assert values == {"minibatch_size": 64, "hp/clip": 0.3}


def test_preset_targets_build_each_individual_with_its_values(small_ppo):
    runner = _es(small_ppo.hyperparameters(lr_schedule="constant"),
                 search_targets={"minibatch_size": (16, 64), "lr": (1e-4, 1e-2)})
    seen = []
    evaluate = runner.evaluate

    def record(*args, **kwargs):
        hp = runner.hyperparameters()
        seen.append((hp["hp/batch_size"].get(), runner.preset.hyperparameters["lr"],
                     hp["hp/lr"].get()))
        return evaluate(*args, **kwargs)

    runner.evaluate = record
    results, eval_results = runner.run()
    evaluated = seen[:-1]  # the last call evaluates the best agent again
    assert len(evaluated) == 8 and len({s[:2] for s in evaluated}) == 8
    for (batch, lr, agent_lr), values in zip(evaluated, [v for h in results["history"]
                                                          for v in h["values"]]):
        assert (batch, lr) == (values["minibatch_size"], values["lr"])
        assert type(batch) is int and 16 <= batch <= 64 and 1e-4 <= lr <= 1e-2
        assert agent_lr == pytest.approx(lr)  # the agent's optimizer runs the searched lr
    best = results["best"]
    assert runner.preset.hyperparameters["minibatch_size"] == best["values"]["minibatch_size"]
    assert best["fitness"] == max(max(h["fitness"]) for h in results["history"])
    assert results["step"] == 2 and set(eval_results) >= {"mean_eval_reward", "returns"}


def test_hp_keys_and_parameters_are_applied_to_the_running_agent(small_ppo):
    runner = _es(small_ppo, search_targets={"hp/clip": (0.05, 0.5), "hp/epochs": (1, 4)},
                 search_params=True, train_agent=False, strategy="cma")
    first_agent = runner.experiment.agent
    seen = []
    evaluate = runner.evaluate

    def record(*args, **kwargs):
        hp = runner.hyperparameters()
        seen.append((hp["hp/clip"].get(), hp["hp/epochs"].get(), runner.parameter_vector()))
        return evaluate(*args, **kwargs)

    runner.evaluate = record
    results, _ = runner.run()
    best = results["best"]
    individuals = [v for h in results["history"] for v in h["values"]]
    fitness = [f for h in results["history"] for f in h["fitness"]]
    assert len(seen) == len(individuals) + 1 == 9
    for (clip, epochs, _), values in zip(seen, individuals):
        assert clip == pytest.approx(values["hp/clip"]) and epochs == values["hp/epochs"]
    vectors = [vector for _, _, vector in seen[:-1]]
    assert len({vector.tobytes() for vector in vectors}) == 8
    assert vectors[int(np.argmax(fitness))] == pytest.approx(best["parameters"], abs=1e-6)
    assert runner.experiment.agent is first_agent  # one agent through the whole search
    hp = runner.hyperparameters()
    assert hp["hp/clip"].get() == pytest.approx(best["values"]["hp/clip"])
    assert hp["hp/epochs"].get() == best["values"]["hp/epochs"]
    assert type(best["values"]["hp/epochs"]) is int
    assert hp["hp/clip"].get() != pytest.approx(0.2)  # moved from the preset's value
    assert runner.parameter_vector() == pytest.approx(best["parameters"], abs=1e-6)
    assert not np.allclose(best["parameters"], runner.x0[: runner.n_params])


def test_train_agent_trains_each_individual(small_ppo):
    runner = _es(small_ppo, search_targets={"hp/clip": (0.05, 0.5)}, iterations=2,
                 popsize=2, train_agent=True)
    evaluated = []
    evaluate = runner.evaluate

    def record(*args, **kwargs):
        evaluated.append((runner.experiment.frame, runner.parameter_vector()))
        return evaluate(*args, **kwargs)

    runner.evaluate = record
    results, _ = runner.run()
    frames = [frame for frame, _ in evaluated]  # 64 more env steps per individual (a step of
    assert [frame // 64 for frame in frames] == [1, 2, 3, 4, 4]  # all copies may pass a budget)
    assert frames[-1] == frames[-2]
    fitness = [f for h in results["history"] for f in h["fitness"]]
    best_network = evaluated[int(np.argmax(fitness))][1]
    assert evaluated[-1][1] == pytest.approx(best_network)  # the best network, restored
    untrained = _es(small_ppo, search_targets={"hp/clip": (0.05, 0.5)}, iterations=1,
                    popsize=2, train_agent=False)
    untrained.run()
    assert untrained.experiment.frame == 0


def test_bad_inputs_are_one_line_errors(small_ppo):
    cases = [
        (dict(search_targets={"lr": (1e-2, 1e-4)}), SearchSpaceError, "empty range"),
        (dict(search_targets={"lrr": (1e-4, 1e-2)}), SearchSpaceError,
         "Did you mean 'lr'.*Valid: .*hp/clip"),
        (dict(search_targets={"clip": {"choices": [0.1, 0.2]}}), SearchSpaceError,
         "categorical"),
        (dict(search_targets={"lr": (1e-4, 1e-2)}, fitness_shaping="rank"), ValueError,
         "valid: raw, centered_ranks, z_score"),
        (dict(search_targets={"lr": (1e-4, 1e-2)}, strategy="pso"), ValueError,
         "valid: cma, openai"),
        (dict(search_targets={"lr": (1e-4, 1e-2)}, es="cma"), TypeError,  # (Mighty's name)
         "^ESRunner takes the strategy as strategy='cma' \\(Mighty's es\\); valid: cma"),
        (dict(), ValueError, "Nothing to search: give search_targets .*looprl run: "
                             "runner.search_targets='{lr:"),
        (dict(search_targets={"lr": (1e-4, 1e-2)}, reset_agent=False), ValueError,
         "need a fresh agent"),
        # sigma 0 was cma's ZeroDivisionError (a traceback), or openai's NaN search; -1 and
        # 'abc' were taken or failed in the strategy's words
        *[(dict(search_targets={"lr": (1e-4, 1e-2)}, sigma=sigma, strategy=strategy),
           ValueError, "sigma must be positive")
          for sigma in (0, -1, "abc", float("nan")) for strategy in ("cma", "openai")],
        # a bound the hyperparameter cannot take failed the search at the first individual there
        (dict(search_targets={"discount_factor": (0.9, 1.5)}), SearchSpaceError,
         "discount_factor must be in \\[0, 1\\], got 1.5"),
        # searched parameters with a target that reshapes the network failed mid-search ("The
        # parameter vector has 251 values; the network has 95 parameters")
        (dict(search_targets={"hidden": (4, 16)}, search_params=True), ValueError,
         "hidden=4 changes its shape: drop 'hidden' from search_targets, or search_params"),
        # the strategy's options and popsize failed in run(), after the first agent was built
        # (openai: "unexpected keyword argument 'lr'"; cma: a list of every option, many lines)
        (dict(search_targets={"lr": (1e-4, 1e-2)}, strategy="openai",
              strategy_options={"lr": 0.1}), ValueError,
         "^strategy_options of openai: unknown lr; it takes learning_rate$"),
        (dict(search_targets={"lr": (1e-4, 1e-2)}, strategy="cma", strategy_options={"bogus": 1}),
         ValueError,
         "^strategy_options of cma: bogus is not a valid option. \\(the options are "),
        (dict(search_targets={"lr": (1e-4, 1e-2)}, strategy="openai", popsize=3), ValueError,
         "popsize must be even"),
        # a negative learning rate descended the fitness, silently; a cma option of another
        # type was cma's TypeError "can only concatenate str (not "float") to str"
        *[(dict(search_targets={"lr": (1e-4, 1e-2)}, strategy="openai",
                strategy_options={"learning_rate": rate}), ValueError,
           "^strategy_options of openai: learning_rate must be a finite number > 0")
          for rate in (-1, 0, "abc", float("inf"))],
        (dict(search_targets={"lr": (1e-4, 1e-2)}, strategy="cma",
              strategy_options={"popsize": "abc"}), TypeError,
         r"^strategy_options of cma: a value of \{'popsize': 'abc'\} is of a type or has a "
         r"text cma cannot read"),
        # a config's text for a switch ('maybe', true in Python) searched, trained or reset
        *[(dict(search_targets={"lr": (1e-4, 1e-2)}, **{flag: "maybe"}), ValueError,
           f"^{flag} must be True or False, got 'maybe'$")
          for flag in ("search_params", "train_agent", "reset_agent")],
        # (was Python's "'int' object is not iterable")
        *[(dict(search_targets={"lr": (1e-4, 1e-2)}, strategy=strategy, strategy_options=5),
           ValueError, f"^strategy_options maps options of the {strategy} strategy to their "
           "values \\(a dict, or None\\), got 5$") for strategy in ("cma", "openai")],
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message) as info:
            _es(small_ppo, **kwargs)
        assert "\n" not in str(info.value)


def test_a_cma_option_cma_cannot_read_is_one_line_not_its_warnings(small_ppo):
    """cma warned (``UserWarning: "abc" is not a safe string``, 4 times for ``popsize``)
    before the error, and for ``tolfun`` kept "abc" and searched on."""
    import warnings
    for option in ("tolfun", "popsize"):
        with warnings.catch_warnings(record=True) as caught, pytest.raises(
                TypeError, match=f"^strategy_options of cma: a value of \\{{'{option}': 'abc'\\}} "
                                 "is of a type or has a text cma cannot read "
                                 "\\(\"abc\" is not a safe string\\)"):
            warnings.simplefilter("always")
            _es(small_ppo, search_targets={"lr": (1e-4, 1e-2)}, strategy="cma",
                strategy_options={option: "abc"})
        assert not [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_searching_the_parameters_of_a_preset_without_one_model_says_how_to_search():
    from looprl.presets import continuous
    # was "The sac preset has no 'model' network to search", with no way out
    with pytest.raises(TypeError, match="^The sac preset has no single 'model' network .*"
                       "search its hyperparameters only \\(search_params=False\\)$"):
        ESRunner(continuous.sac.hyperparameters(hidden=8), "Pendulum-v1", search_params=True,
                 search_targets={"lr_actor": (1e-4, 1e-2)}, iterations=1, popsize=2)


def test_a_multiagent_preset_takes_a_game_id_and_names_its_agents_keys():
    from looprl.presets.multiagent import dqn
    from looprl.runners.space import SearchSpaceError

    # were: 'tictactoe_v3' made as a Gymnasium id (the multi-agent preset could not run by id),
    # and "Did you mean 'epsilon'?" for hp/epsilon, the agents' own keys listed far behind
    with pytest.raises(SearchSpaceError, match="'hp/epsilon' is not a hyperparameter of "
                       "independent_dqn. Did you mean 'hp/epsilon/player_1', "
                       "'hp/epsilon/player_2'\\?"):
        ESRunner(dqn, "tictactoe_v3", search_targets={"hp/epsilon": (0.0, 0.5)},
                 iterations=1, popsize=2, num_steps_per_iteration=200)


def test_searched_parameters_take_preset_targets_that_keep_the_network(small_ppo):
    runner = _es(small_ppo, search_targets={"lr": (1e-4, 1e-2)}, search_params=True)
    assert runner.n_params == runner.parameter_vector().size


def test_a_seeded_search_is_reproducible(small_ppo):
    runs = [leaves_global_random_numbers(_es(  # (and the caller's random numbers go on)
        small_ppo, search_targets={"lr": (1e-4, 1e-2, "log")}, iterations=1, popsize=2,
        strategy="cma").run)[0]["history"] for _ in range(2)]
    assert runs[0] == runs[1]


def test_a_search_says_once_that_its_individuals_never_trained(small_ppo, caplog):
    """One line for the search, not one per individual (they share its budget); and the
    next search in the process says it again (was: nothing, the line said once per process)."""
    caplog.set_level("WARNING", logger="looprl")
    for _ in range(2):  # (n_envs x n_steps = 128 rows per update: more than its 64 frames)
        _es(small_ppo.hyperparameters(n_steps=32), search_targets={"lr": (1e-4, 1e-2)},
            iterations=1, popsize=2, eval_episodes=1).run()
    assert caplog.text.count("the agent never trained in its") == 2, caplog.text


def test_each_iteration_logs_one_line_with_the_best_values_found(small_ppo, caplog):
    """The line names the best individual's searched values, and none when the search is of
    network parameters only (no trailing ``{}``)."""
    caplog.set_level("INFO", logger="looprl.runners.es")
    _es(small_ppo, search_params=True, train_agent=False, iterations=1, popsize=2).run()
    _es(small_ppo, search_targets={"hp/clip": (0.05, 0.5)}, train_agent=False, iterations=1,
        popsize=2).run()
    lines = [r.getMessage() for r in caplog.records if r.name == "looprl.runners.es"]
    assert len(lines) == 2 and all(line.startswith("ES openai 1/1: fitness mean ")
                                   for line in lines)
    assert lines[0].rsplit(" ", 1)[-1].replace(".", "").replace("-", "").isdigit(), lines[0]
    assert "{'hp/clip': " in lines[1]


def test_a_search_whose_every_individual_diverged_evaluates_nothing(small_ppo, monkeypatch):
    """Every individual diverged (fitness -inf): the run reported one of them as ``best`` and
    evaluated its diverged agent as if it had trained (Optuna's search reports no trial)."""
    from looprl.runners.base import Runner

    def diverge(self, num_steps):
        raise FloatingPointError("the loss is NaN")

    monkeypatch.setattr(Runner, "train", diverge)
    results, eval_results = _es(small_ppo, iterations=1, popsize=2,
                                search_targets={"lr": (1e-4, 1e-2, "log")}).run()
    assert results["best"] is None and eval_results == {}
    assert results["history"][0]["fitness"] == [-np.inf, -np.inf]


@pytest.mark.parametrize("targets", [{"lr": (1e-4, 1e-2, "log")}, {"hp/clip": (0.05, 0.5)}],
                         ids=["fresh agents", "one agent"])
def test_each_individuals_progress_lines_name_it(small_ppo, targets, capsys):
    """``looprl run runner=es`` showed one progress block per individual, all alike."""
    _es(small_ppo, search_targets=targets, iterations=1, popsize=2, quiet=False).run()
    lines = capsys.readouterr().err.splitlines()
    for individual in ("gen001_ind000", "gen001_ind001"):
        assert any(line.startswith(f"ppo on CartPole-v1 [{individual}]: ") for line in lines)
        assert any(line.startswith(f"ppo on CartPole-v1 [{individual}]: evaluation: 1/1 "
                                   "episodes (100%)") for line in lines)
    assert all(line.startswith("ppo on CartPole-v1 [") for line in lines), lines


def test_the_shared_agent_keeps_the_best_individuals_normalizers(small_ppo, tmp_path):
    """With one agent through the search, the best individual's normalizers' statistics (as
    it was evaluated) come back with its network: the final evaluation and ``normalization.pt``
    beside ``preset.pt`` have them (were: the last individual's)."""
    import gymnasium as gym

    from looprl.environments import GymEnvironment
    from looprl.environments.wrappers import read_normalization, saved_normalization
    env = GymEnvironment("CartPole-v1", wrap_env=gym.wrappers.NormalizeObservation)
    runner = ESRunner(small_ppo, env, iterations=1, popsize=4, num_steps_per_iteration=64,
                      eval_episodes=1, seed=0, strategy="openai", sigma=0.3,
                      search_targets={"hp/clip": (0.05, 0.5)}, train_agent=True)
    counts, evaluate = [], runner.evaluate

    def record(*args, **kwargs):
        statistics = read_normalization(runner.experiment.vector_env)
        counts.append(statistics[1]["normalizers"][0]["obs_rms"]["count"])
        return evaluate(*args, **kwargs)

    runner.evaluate = record
    results, _ = runner.run()
    best = counts[int(np.argmax(results["history"][0]["fitness"]))]
    assert best < counts[3] and counts[-1] == best  # (the final evaluation's: the best's)
    runner.save_preset(str(tmp_path))
    assert saved_normalization(tmp_path)[1]["normalizers"][0]["obs_rms"]["count"] == best
    assert runner.experiment.vector_env.env.unwrapped.envs[0].env.update_running_mean  # (trains)


def test_an_environment_that_returns_nan_stops_the_search_in_one_line(small_ppo) -> None:
    """NaN rewards from the environment make every individual diverge, whatever its values:
    the search stops at the first, with the line that blames the environment (was: each
    individual scored as diverged, and the search ended 'successfully' with no best)."""
    from tests.experiments.test_diagnose import Corrupt

    from looprl.environments import GymEnvironment
    from looprl.experiments.diagnose import DataDivergence

    env = GymEnvironment(Corrupt("reward", after=20), name="NaNCartPole")
    es = ESRunner(small_ppo, env, search_targets={"lr": (1e-4, 1e-2, "log")}, iterations=1,
                  popsize=2, num_steps_per_iteration=128, eval_episodes=1)
    with pytest.raises(DataDivergence, match=r"The environment NaNCartPole returned NaN or "
                                             r"infinite rewards .* not a learning-rate problem"):
        es.run()


def test_ctrl_c_keeps_the_best_individual_so_far_and_looprl_run_saves_it(tmp_path,
                                                                         monkeypatch):
    """(Was: Ctrl-C lost the search: no preset.pt, where an online run saves the agent as
    trained so far.) Ctrl-C in generation 2: the current agent is generation 1's best, which
    looprl run saves as the run's preset.pt (to watch, or to train on)."""
    import torch

    from looprl.configs.app import main as run
    from looprl.runners import es as es_module

    score = es_module.score_individual
    scored = []

    def interrupted(runner, individual):
        if individual.iteration == 2:
            raise KeyboardInterrupt
        scored.append((score(runner, individual), individual.values["lr"]))
        return scored[-1][0]

    monkeypatch.setattr(es_module, "score_individual", interrupted)
    with pytest.raises(KeyboardInterrupt, match=f"the run is in {tmp_path}"):
        run(["runner=es", "runner.popsize=2", "runner.iterations=3", "runner.strategy=openai",
             "runner.num_steps_per_iteration=64", "runner.search_targets={lr: [1e-4, 1e-2]}",
             "algorithm.n_envs=2", "algorithm.n_steps=16", "algorithm.hidden=8",
             "test_episodes=1", "logging.quiet=true", "hydra/job_logging=none",
             "hydra/hydra_logging=none", "seed=0", f"hydra.run.dir={tmp_path}"])
    best_lr = max(scored)[1]
    saved = torch.load(tmp_path / "preset.pt", weights_only=False)
    assert len(scored) == 2 and saved.hyperparameters["lr"] == pytest.approx(best_lr)


def test_a_warning_of_the_agent_made_with_the_runner_is_said_once_in_its_search(small_ppo,
                                                                               caplog):
    """(Was: twice, once as the runner made its first agent, again in the search.)"""
    caplog.set_level("WARNING", logger="looprl")
    runner = _es(small_ppo.hyperparameters(minibatch_size=256), search_targets={"lr": (1e-4, 1e-2)},
                 iterations=1, popsize=2, eval_episodes=1)
    runner.run()
    assert caplog.text.count("minibatch_size=256 is larger than") == 1, caplog.text
