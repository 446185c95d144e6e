"""Evolution strategies with an ask/tell interface, chosen by name.

Both have a ``mean`` (the search distribution's), ``ask() -> population`` (one individual per
row) and ``tell(population, fitness)``, and both *maximise*: ``tell`` takes shaped fitness
where higher is better.

* ``"cma"``: CMA-ES from the ``cma`` package (``CMAEvolutionStrategy``, which minimises:
  the fitness is negated for it). Above ``DIAGONAL_ABOVE`` dimensions (network parameters)
  it keeps a diagonal covariance (sep-CMA-ES), whose cost grows linearly with the dimension.
* ``"openai"``: the ES of Salimans et al. (2017), https://arxiv.org/abs/1703.03864:
  Gaussian perturbations ``mean + sigma * eps`` of one mean, antithetic (``eps`` and
  ``-eps``), and a gradient step ``mean += learning_rate / (n * sigma) * sum(F_i eps_i)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from looprl.core.imports import import_extra

#: Dimensions above which CMA-ES keeps a diagonal covariance matrix.
DIAGONAL_ABOVE = 200


class OpenAIES:
    """An isotropic-noise ES with antithetic sampling (Salimans et al., 2017): ``popsize``
    (even) individuals around the mean ``x0``, perturbed by ``sigma``, and gradient steps of
    ``learning_rate``."""

    def __init__(self, x0: np.ndarray, sigma: float, popsize: int, seed: int,
                 learning_rate: float = 0.01):
        if popsize < 2 or popsize % 2:
            raise ValueError(f"The openai strategy samples antithetic pairs: popsize must be "
                             f"even and >= 2, got {popsize}")
        self.mean = np.asarray(x0, dtype=np.float64).copy()
        self.sigma = float(sigma)
        self.popsize = int(popsize)
        self.learning_rate = float(learning_rate)
        self._rng = np.random.default_rng(seed)

    def ask(self) -> np.ndarray:
        """``popsize`` individuals: ``mean + sigma * eps`` for ``eps`` and ``-eps``."""
        half = self._rng.standard_normal((self.popsize // 2, self.mean.size))
        return self.mean + self.sigma * np.concatenate([half, -half])

    def tell(self, solutions: np.ndarray, fitness: np.ndarray) -> None:
        """One gradient step of the mean on the (shaped) fitness of ``solutions``."""
        eps = (np.asarray(solutions, dtype=np.float64) - self.mean) / self.sigma
        gradient = np.asarray(fitness, dtype=np.float64) @ eps / (len(eps) * self.sigma)
        self.mean = self.mean + self.learning_rate * gradient


class CMAES:
    """CMA-ES of the ``cma`` package behind the same ask/tell (maximising) interface; ``seed``
    seeds its Gaussian samples (not NumPy's global generator), ``options`` are more
    ``cma.CMAOptions``."""

    def __init__(self, x0: np.ndarray, sigma: float, popsize: int, seed: int,
                 options: dict[str, Any] | None = None):
        cma = import_extra("cma", "The cma strategy needs the cma package", "hpo")
        rng = np.random.default_rng(seed)
        x0 = np.asarray(x0, dtype=np.float64)
        settings = {"popsize": int(popsize), "seed": np.nan, "verbose": -9,
                    "randn": lambda lam, n: rng.standard_normal((lam, n)),
                    "CMA_diagonal": x0.size > DIAGONAL_ABOVE, **(options or {})}
        self._es = cma.CMAEvolutionStrategy(x0, float(sigma), settings)

    @property
    def mean(self) -> np.ndarray:
        """The distribution's current mean."""
        return np.asarray(self._es.mean, dtype=np.float64)

    def ask(self) -> np.ndarray:
        """``popsize`` individuals sampled by CMA-ES."""
        return np.asarray(self._es.ask(), dtype=np.float64)

    def tell(self, solutions: np.ndarray, fitness: np.ndarray) -> None:
        """Update CMA-ES (which minimises) with the negated fitness."""
        self._es.tell(list(solutions), list(-np.asarray(fitness, dtype=np.float64)))


STRATEGIES: tuple[str, ...] = ("cma", "openai")


def make_strategy(name: str, x0: np.ndarray, sigma: float, popsize: int, seed: int,
                  options: dict[str, Any] | None = None) -> CMAES | OpenAIES:
    """The strategy called ``name`` (``"cma"`` or ``"openai"``); ``options`` go to it
    (cma's options, or ``{"learning_rate": ...}`` for openai)."""
    if name == "cma":
        return CMAES(x0, sigma, popsize, seed, options)
    if name == "openai":
        return OpenAIES(x0, sigma, popsize, seed, **(options or {}))
    raise ValueError(f"Unknown ES strategy {name!r}; valid: {', '.join(STRATEGIES)}")
