"""Evolution strategies chosen by name (``"cma"``, ``"openai"``), each with a ``mean``,
``ask() -> population`` (one individual per row) and ``tell(population, fitness)``; both
*maximise* the fitness, shaped from the raw returns by one of ``SHAPERS``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from looprl.core.imports import import_extra
from looprl.core.suggest import is_number

#: Dimensions above which CMA-ES keeps a diagonal covariance matrix (sep-CMA-ES).
DIAGONAL_ABOVE = 200


class OpenAIES:
    """The ES of Salimans et al. (2017): antithetic Gaussian perturbations ``mean +/- sigma *
    eps`` (``popsize`` even) and gradient steps of ``options["learning_rate"]`` on the mean."""

    def __init__(self, x0: np.ndarray, sigma: float, popsize: int, seed: int,
                 options: dict[str, Any] | None = None):
        unknown = sorted(set(options or {}) - {"learning_rate"})
        if unknown:
            raise ValueError(f"strategy_options of openai: unknown {', '.join(unknown)}; it "
                             "takes learning_rate")
        learning_rate = (options or {}).get("learning_rate", 0.01)
        if not (is_number(learning_rate) and 0 < learning_rate < math.inf):
            raise ValueError(f"strategy_options of openai: learning_rate must be a finite number "
                             f"> 0, got {learning_rate!r}")
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
    """CMA-ES of the ``cma`` package, maximising; ``seed`` seeds its Gaussian samples (not
    NumPy's global generator), ``options`` are more ``cma.CMAOptions``."""

    def __init__(self, x0: np.ndarray, sigma: float, popsize: int, seed: int,
                 options: dict[str, Any] | None = None):
        cma = import_extra("cma", "The cma strategy needs the cma package", "hpo")
        if int(popsize) < 2:  # (cma's own error: "number of weights must be >=2, was 1")
            raise ValueError(f"The cma strategy recombines the best half of each generation: "
                             f"popsize must be >= 2, got {popsize}")
        rng = np.random.default_rng(seed)
        x0 = np.asarray(x0, dtype=np.float64)
        settings = {"popsize": int(popsize), "seed": np.nan, "verbose": -9,
                    "randn": lambda lam, n: rng.standard_normal((lam, n)),
                    "CMA_diagonal": x0.size > DIAGONAL_ABOVE}
        if int(popsize) < 3:  # (cma's TPA step-size rule, from 300 dimensions on, injects two
            # individuals per generation: tell() fails with fewer than 3; CSA does not)
            settings["AdaptSigma"] = cma.sigma_adaptation.CMAAdaptSigmaCSA
        settings.update(options or {})
        try:
            with warnings.catch_warnings():  # (a value it cannot read: cma warns, keeps it)
                warnings.filterwarnings("error", category=UserWarning,
                                        module="cma.options_parameters")
                self._es = cma.CMAEvolutionStrategy(x0, float(sigma), settings)
        except ValueError as error:  # (cma's lists every valid option, over many lines)
            raise ValueError(f"strategy_options of cma: {str(error).splitlines()[0]} (the "
                             "options are cma.CMAOptions())") from None
        except (TypeError, UserWarning) as error:  # (another type: cma's names no option)
            raise TypeError(f"strategy_options of cma: a value of {options} is of a type or "
                            f"has a text cma cannot read "
                            f"({str(error).partition(' (known words')[0]}); see "
                            "cma.CMAOptions()") from None

    @property
    def mean(self) -> np.ndarray:
        """The search distribution's mean."""
        return np.asarray(self._es.mean, dtype=np.float64)

    def ask(self) -> np.ndarray:
        """``popsize`` individuals drawn by CMA-ES."""
        return np.asarray(self._es.ask(), dtype=np.float64)

    def tell(self, solutions: np.ndarray, fitness: np.ndarray) -> None:
        """Update CMA-ES (which minimises) with the negated fitness."""
        self._es.tell(list(solutions), list(-np.asarray(fitness, dtype=np.float64)))


STRATEGIES: tuple[str, ...] = ("cma", "openai")


def make_strategy(name: str, x0: np.ndarray, sigma: float, popsize: int, seed: int,
                  options: dict[str, Any] | None = None) -> CMAES | OpenAIES:
    """The strategy called ``name``; ``options`` are cma's, or ``{"learning_rate": ...}``."""
    if not isinstance(options or {}, Mapping):  # (strategy_options=5: "not iterable")
        raise ValueError(f"strategy_options maps options of the {name} strategy to their values "
                         f"(a dict, or None), got {options!r:.40}")
    if name not in STRATEGIES:
        raise ValueError(f"Unknown ES strategy {name!r}; valid: {', '.join(STRATEGIES)}")
    return (CMAES if name == "cma" else OpenAIES)(x0, sigma, popsize, seed, options)


def raw(fitness: np.ndarray) -> np.ndarray:
    """The returns unchanged (as floats)."""
    return np.asarray(fitness, dtype=np.float64).copy()


def centered_ranks(fitness: np.ndarray) -> np.ndarray:
    """Ranks (ties in the order given) scaled to ``[-0.5, 0.5]`` (Salimans et al., 2017)."""
    fitness = np.asarray(fitness, dtype=np.float64)
    if fitness.size < 2:
        return np.zeros_like(fitness)
    ranks = np.empty(fitness.size, dtype=np.float64)
    ranks[np.argsort(fitness, kind="stable")] = np.arange(fitness.size)
    return ranks / (fitness.size - 1) - 0.5


def z_score(fitness: np.ndarray) -> np.ndarray:
    """Returns standardised to mean 0 and standard deviation 1 (all 0 if all equal)."""
    fitness = np.asarray(fitness, dtype=np.float64)
    std = fitness.std()
    return np.zeros_like(fitness) if std == 0 else (fitness - fitness.mean()) / std


SHAPERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "raw": raw, "centered_ranks": centered_ranks, "z_score": z_score}


def fitness_shaper(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """The shaping function called ``name`` (of ``SHAPERS``)."""
    if name not in SHAPERS:
        raise ValueError(f"Unknown fitness shaping {name!r}; valid: {', '.join(SHAPERS)}")
    return SHAPERS[name]
