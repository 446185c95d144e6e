"""Fitness shaping against hand-computed values, and both strategies on a toy quadratic."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from looprl.runners import fitness_shaper, make_strategy


def test_raw_is_the_returns_unchanged():
    assert fitness_shaper("raw")(np.array([3.0, -1.0])).tolist() == [3.0, -1.0]


def test_centered_ranks_by_hand():
    # ranks of [10, 30, 20, 0] are [1, 3, 2, 0]; / 3 - 0.5
    shaped = fitness_shaper("centered_ranks")(np.array([10.0, 30.0, 20.0, 0.0]))
    assert shaped == pytest.approx([1 / 3 - 0.5, 0.5, 2 / 3 - 0.5, -0.5])


def test_z_score_by_hand():
    # mean 2, population std sqrt(2/3)
    shaped = fitness_shaper("z_score")(np.array([1.0, 2.0, 3.0]))
    s = np.sqrt(2 / 3)
    assert shaped == pytest.approx([-1 / s, 0.0, 1 / s])
    assert fitness_shaper("z_score")(np.array([5.0, 5.0])).tolist() == [0.0, 0.0]


def test_unknown_shaping_is_a_one_line_error_listing_the_valid_ones():
    with pytest.raises(ValueError, match="^Unknown fitness shaping 'ranks'; valid: raw, "
                                         "centered_ranks, z_score$"):
        fitness_shaper("ranks")


def _quadratic(x: np.ndarray) -> np.ndarray:
    """Maximised at (3, -2): 0."""
    return -((x - np.array([3.0, -2.0])) ** 2).sum(axis=1)


@pytest.mark.parametrize("name, options", [("openai", {"learning_rate": 0.3}), ("cma", None)])
def test_strategies_maximise_a_quadratic(name, options):
    es = make_strategy(name, np.zeros(2), 0.5, popsize=10, seed=0, options=options)
    shape = fitness_shaper("centered_ranks")
    for _ in range(60):
        population = es.ask()
        es.tell(population, shape(_quadratic(population)))
    assert _quadratic(es.mean[None])[0] > -0.05  # from -13 at the start


def test_openai_samples_antithetic_pairs_and_is_seeded():
    population = make_strategy("openai", np.ones(3), 0.1, popsize=4, seed=1).ask()
    assert population[:2] - 1 == pytest.approx(-(population[2:] - 1))
    again = make_strategy("openai", np.ones(3), 0.1, popsize=4, seed=1).ask()
    assert population.tolist() == again.tolist()


def test_openai_step_by_hand():
    es = make_strategy("openai", np.zeros(1), 0.5, popsize=2, seed=0,
                       options={"learning_rate": 0.1})
    population = np.array([[0.5], [-0.5]])  # eps = +1, -1
    es.tell(population, np.array([1.0, -1.0]))
    # gradient = (1 * 1 + -1 * -1) / (2 * 0.5) = 2; mean = 0 + 0.1 * 2
    assert es.mean.tolist() == pytest.approx([0.2])


def test_cma_is_seeded():
    first = make_strategy("cma", np.zeros(3), 0.3, popsize=6, seed=4).ask()
    second = make_strategy("cma", np.zeros(3), 0.3, popsize=6, seed=4).ask()
    assert first.tolist() == second.tolist()


def test_bad_strategy_names_and_sizes_are_one_line_errors():
    with pytest.raises(ValueError, match="^Unknown ES strategy 'pso'; valid: cma, openai$"):
        make_strategy("pso", np.zeros(2), 0.1, 4, 0)
    with pytest.raises(ValueError, match="popsize must be even"):
        make_strategy("openai", np.zeros(2), 0.1, 5, 0)
    with pytest.raises(ValueError, match="popsize must be >= 2, got 1"):
        make_strategy("cma", np.zeros(2), 0.1, 1, 0)


@pytest.mark.parametrize("dimensions", [5, 300, 5000])
def test_cma_with_a_population_of_two_searches_many_dimensions(dimensions):
    """From 300 dimensions on (``search_params=True``: a network's parameters) cma adapts
    its step size by TPA, which injects two individuals into each generation; with
    ``popsize=2`` its ``tell`` failed ("Found unused injected direction/solutions")."""
    es = make_strategy("cma", np.zeros(dimensions), 0.1, popsize=2, seed=0)
    for _ in range(3):
        population = es.ask()
        assert population.shape == (2, dimensions)
        es.tell(population, -(population ** 2).sum(axis=1))


def test_cma_searches_one_dimension_too():
    es = make_strategy("cma", np.array([0.5]), 0.2, popsize=4, seed=0)
    for _ in range(30):
        population = es.ask()
        es.tell(population, -((population[:, 0] - 0.8) ** 2))
    assert es.mean[0] == pytest.approx(0.8, abs=0.01)


def test_cma_without_the_package_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "cma", None)
    with pytest.raises(ImportError, match=r"pip install looprl\[hpo\]"):
        make_strategy("cma", np.zeros(2), 0.1, 4, 0)
