"""``ESRunner``: evolution strategies (``"cma"``, ``"openai"``: a ``mean``, ``ask()`` and
``tell(population, fitness)``, maximising the fitness ``SHAPERS`` shape) over hyperparameters,
network parameters, or both. An individual is one vector: the network parameters
(``search_params=True``), then a unit coordinate per target.
"""

from __future__ import annotations

import contextlib
import logging
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from looprl.core.imports import import_extra
from looprl.core.suggest import check_count, check_flag, check_positive, is_number
from looprl.environments.wrappers import load_normalization, read_normalization
from looprl.experiments.diagnose import DataDivergence
from looprl.runners.base import Runner, one_run
from looprl.runners.space import SearchSpaceError, parse_search_space, search_mapping
from looprl.runners.trials import KeptAgent, LocalTrials

log = logging.getLogger(__name__)

#: Dimensions above which CMA-ES keeps a diagonal covariance matrix (sep-CMA-ES).
DIAGONAL_ABOVE = 200


class OpenAIES:
    """The ES of Salimans et al. (2017): antithetic Gaussian perturbations ``mean +/- sigma *
    eps`` (``popsize`` even) and gradient steps of ``options["learning_rate"]`` on the mean."""

    def __init__(self, x0: np.ndarray, sigma: float, popsize: int, seed: int,
                 options: dict[str, Any] | None = None):
        if unknown := sorted(set(options or {}) - {"learning_rate"}):
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
    """CMA-ES of the ``cma`` package, maximising; ``seed`` seeds its samples, ``options`` are
    more ``cma.CMAOptions``."""

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
            settings["AdaptSigma"] = cma.sigma_adaptation.CMAAdaptSigmaCSA  # individuals)
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
            raise TypeError(f"strategy_options of cma: a value of {options} is of a type or has "
                            f"a text cma cannot read ({str(error).partition(' (known words')[0]})"
                            "; see cma.CMAOptions()") from None

    @property
    def mean(self) -> np.ndarray:
        """The search distribution's mean."""
        return np.asarray(self._es.mean, dtype=np.float64)

    def ask(self) -> np.ndarray:
        """``popsize`` individuals."""
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


class ESRunner(Runner):
    """Evolution strategies, as in Mighty, from the values and parameters of a first agent built
    here; run directories ``genGGG_indIII``, then ``best``.

    Args:
        agent, env, **kwargs: ``Runner``'s.
        search_targets: name (preset hyperparameter, ``hp/*`` key) -> bounds (``space``).
        search_params: also search the network parameters, as one flat vector.
        train_agent: train each individual ``num_steps_per_iteration`` steps first.
        sigma: initial standard deviation of the search (parameter and unit coordinates).
        fitness_shaping: ``"raw"``, ``"centered_ranks"`` or ``"z_score"``.
        strategy_options: cma options, or ``{"learning_rate": ...}`` for openai.
        reset_agent: a fresh agent per individual (default: when there are preset targets).
        trials: ``LocalTrials()`` (default) or ``RayTrials(...)`` (needs fresh agents).
    """

    name = "es"
    scores = "individual"

    def __init__(self, agent: Any, env: Any, search_targets: Mapping[str, Any] | None = None,
                 search_params: bool = False, train_agent: bool = True, iterations: int = 10,
                 popsize: int = 8, num_steps_per_iteration: int = 10_000, strategy: str = "cma",
                 sigma: float = 0.1, fitness_shaping: str = "centered_ranks",
                 strategy_options: dict[str, Any] | None = None,
                 reset_agent: bool | None = None, trials: Any = None, **kwargs: Any):
        if "es" in kwargs:  # (Mighty's name)
            raise TypeError(f"ESRunner takes the strategy as strategy={kwargs['es']!r} (Mighty's "
                            f"es); valid: {', '.join(STRATEGIES)}")
        kwargs.setdefault("quiet", True)
        super().__init__(agent, env, **kwargs)
        if strategy not in STRATEGIES:
            raise ValueError(f"Unknown ES strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
        self.shape = fitness_shaper(fitness_shaping)
        targets = search_mapping(search_targets, "search_targets")
        if not targets and not search_params:
            raise ValueError("Nothing to search: give search_targets (bounds by name: {'lr': "
                             "(1e-4, 1e-2, 'log')}; looprl run: runner.search_targets="
                             "'{lr:[1e-4,1e-2,log]}'), search_params=True, or both")
        self.search_targets = dict(targets)  # (Mighty's: name -> bounds, in the given order)
        self.search_params = check_flag("search_params", search_params)
        self.train_agent = check_flag("train_agent", train_agent)
        if reset_agent is not None:
            check_flag("reset_agent", reset_agent)
        check_count(iterations=iterations, popsize=popsize,
                    num_steps_per_iteration=num_steps_per_iteration)
        check_positive(sigma=sigma)
        self.iterations, self.popsize = int(iterations), int(popsize)
        self.num_steps_per_iteration = int(num_steps_per_iteration)
        self.strategy, self.sigma, self.strategy_options = strategy, sigma, strategy_options
        preset_targets = [name for name in targets if not name.startswith("hp/")]
        if reset_agent is False and preset_targets:
            raise ValueError(f"Preset hyperparameters ({', '.join(preset_targets)}) need a "
                             "fresh agent per individual: reset_agent=False cannot apply them")
        self.fresh_agents = bool(preset_targets) if reset_agent is None else reset_agent
        self.trials = LocalTrials() if trials is None else trials
        if not (self.trials.in_process or self.fresh_agents):
            raise ValueError("ES individuals on Ray are fresh agents, each in a process of its "
                             "own; with hp/* targets only, one agent goes through the search: "
                             "set reset_agent=True (runner.reset_agent=true) or run it locally")
        if not self.fresh_agents:  # (fresh agents: the first writes no run directory)
            self.label_next_run(Individual.label(1, 0))
        self.new_agent(train_steps=self._budget(), logged=not self.fresh_agents)
        current = {**self.preset.hyperparameters,
                   **{key: h.get() for key, h in self.hyperparameters().items()}}
        self.dimensions = (parse_search_space(targets, current, self.builder.default_name)
                           if targets else [])
        if categorical := [d.name for d in self.dimensions if d.kind == "categorical"]:
            raise SearchSpaceError(f"ES searches numeric ranges; {categorical[0]!r} is "
                                   "categorical (use OptunaRunner for choices)")
        units = [d.encode(current[d.name]) for d in self.dimensions]
        if search_params:  # one network shape: a target that changes it fails now, not mid-search
            shapes = [p.shape for p in self._model().parameters()]
            for d in [d for d in self.dimensions if not d.name.startswith("hp/")]:
                for value in (d.decode(0.0), d.decode(1.0)):
                    preset = self.builder.hyperparameters(**{d.name: value}).env(self.env).build()
                    if [p.shape for p in preset.model.parameters()] != shapes:
                        raise ValueError(f"search_params=True searches the parameters of one "
                                         f"network, but {d.name}={value!r} changes its shape: "
                                         f"drop {d.name!r} from search_targets, or search_params")
        params = self.parameter_vector() if search_params else np.zeros(0)
        self.x0 = np.concatenate([params, np.asarray(units, dtype=np.float64)])
        self.n_params = self.x0.size - len(self.dimensions)
        make_strategy(strategy, self.x0, sigma, self.popsize, self.seed,
                      strategy_options)  # (its options and popsize checked now, not in run())

    def _budget(self) -> float:
        """What schedules anneal over: one individual's training, or the whole search."""
        if not self.train_agent:
            return math.inf
        per_agent = 1 if self.fresh_agents else self.iterations * self.popsize
        return per_agent * self.num_steps_per_iteration

    def decode(self, individual: np.ndarray) -> tuple[np.ndarray | None, dict[str, Any]]:
        """``(parameters or None, {target: value})`` of one individual."""
        individual = np.asarray(individual, dtype=np.float64)
        params = individual[: self.n_params] if self.search_params else None
        return params, {d.name: d.decode(u)
                        for d, u in zip(self.dimensions, individual[self.n_params:])}

    @one_run
    def run(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Search, then evaluate the best individual: ``({"step", "best", "history"},
        eval_results)``; ``best`` ``None`` and no evaluation (``{}``) if all diverged."""
        es = make_strategy(self.strategy, self.x0, self.sigma, self.popsize, self.seed,
                           self.strategy_options)
        self._best: dict[str, Any] = {"fitness": -math.inf}
        self._best_agent: KeptAgent | None = None
        self._best_network: np.ndarray | None = None
        self._best_normalization: list[Any] | None = None  # (the shared agent's, as evaluated)
        history = []
        train_steps = self.num_steps_per_iteration if self.train_agent else 0
        try:
            for iteration in range(1, self.iterations + 1):
                population = es.ask()
                individuals = [Individual(iteration, index, *self.decode(vector),
                                          self.fresh_agents, self._budget(), train_steps)
                               for index, vector in enumerate(population)]
                scored = self.trials.map(self, score_individual, individuals,
                                         keep=self.fresh_agents)
                fitness = np.array([self.record(individual, value, agent)
                                    for individual, (value, agent) in zip(individuals, scored)])
                finite = fitness[np.isfinite(fitness)]  # (diverged: just below the worst other)
                worst = finite.min() - 1.0 if finite.size else 0.0
                es.tell(population, self.shape(np.where(np.isfinite(fitness), fitness, worst)))
                history.append({"iteration": iteration, "fitness": fitness.tolist(),
                                "values": [i.values for i in individuals],
                                "mean_fitness": float(np.mean(fitness)),
                                "max_fitness": float(np.max(fitness)),
                                "best_fitness": float(self._best["fitness"])})
                values = self._best["values"]  # ({}: it searches network parameters only)
                log.info("ES %s %d/%d: fitness mean %.4g, max %.4g; best so far %.4g%s",
                         self.strategy, iteration, self.iterations, history[-1]["mean_fitness"],
                         history[-1]["max_fitness"], self._best["fitness"],
                         f" {values}" if values else "")
        except KeyboardInterrupt:  # (the best so far is the current agent: looprl run saves it)
            if self._use_best(label=False):
                log.warning("ES interrupted in generation %d: the current agent is the best so "
                            "far (generation %d, individual %d, fitness %.4g)",
                            len(history) + 1, self._best["iteration"],
                            self._best["individual"], self._best["fitness"])
            else:  # (no agent to save: an individual's half-trained one is none)
                self.close()
            raise
        finally:
            self.trials.close()
        if not self._use_best():  # (as an Optuna search none of whose trials completed)
            log.warning("No ES individual scored a finite fitness (all diverged): nothing to "
                        "evaluate")
            return {"step": self.iterations, "best": None, "history": history}, {}
        return {"step": self.iterations, "best": self._best, "history": history}, self.evaluate()

    def _use_best(self, label: bool = True) -> bool:
        """Make the best individual so far the current agent (with ``label``, logging in the
        run directory ``best``); ``False`` (closing any kept agent) if none scored a finite
        fitness."""
        best = self._best
        if not math.isfinite(best["fitness"]):
            if self._best_agent is not None:
                self._best_agent.close(self)
            return False
        if self.fresh_agents:  # (a finite best: recorded with its agent)
            self._best_agent.restore(self)
        if label:
            self.label_run("best", generation=best["iteration"], individual=best["individual"],
                           values=best["values"])
        if not self.fresh_agents:
            self.configure(best["values"], fresh=False)
            if self._best_network is not None:
                self.apply_parameters(self._best_network)
            load_normalization(self.experiment.vector_env, self._best_normalization,
                               self.experiment.name, freeze=False)
        return True

    def record(self, individual: Individual, fitness: float, agent: KeptAgent | None
               ) -> float:
        """Note each scored ``individual`` in order (its kept-open ``agent``: fresh agents
        only), keeping the best so far; its fitness."""
        if fitness > self._best["fitness"] or "values" not in self._best:
            params = individual.params
            self._best = {"fitness": fitness, "iteration": individual.iteration,
                          "individual": individual.index, "values": individual.values,
                          "parameters": None if params is None else params.copy()}
            if agent is not None:  # kept open; the one it replaces closed
                agent.detach(self)
                previous, self._best_agent = self._best_agent, agent
                if previous is not None:
                    previous.close(self)
            else:  # the network and normalizers as evaluated (trained from the individual's)
                with contextlib.suppress(TypeError):  # (a preset without a ``model``: None)
                    self._best_network = self.parameter_vector()
                self._best_normalization = read_normalization(self.experiment.vector_env)
        return fitness


@dataclass
class Individual:
    """One individual of a generation, as a trial scores it (``score_individual``)."""

    iteration: int
    index: int
    params: np.ndarray | None
    values: dict[str, Any]
    fresh: bool  # a fresh agent (else the runner's current agent goes on)
    budget: float  # what a fresh agent's schedules anneal over
    train_steps: int  # training before the evaluation (0: none)

    @staticmethod
    def label(iteration: int, index: int) -> str:
        """The run directory's name of individual ``index`` of generation ``iteration``."""
        return f"gen{iteration:03d}_ind{index:03d}"


def score_individual(runner: Runner, individual: Individual) -> float:
    """Apply, train and evaluate ``individual``; its fitness (``-inf``: it diverged)."""
    label = runner.label_next_run if individual.fresh else runner.label_run  # (its run directory)
    label(individual.label(individual.iteration, individual.index),
          generation=individual.iteration, individual=individual.index, values=individual.values)
    runner.configure(individual.values, individual.budget, fresh=individual.fresh)
    if individual.params is not None:
        runner.apply_parameters(individual.params)
    try:
        if individual.train_steps:
            runner.train(individual.train_steps)
        fitness = runner.evaluate()["mean_eval_reward"]
    except DataDivergence:  # (the environment's NaNs: every individual's, whatever its values)
        raise
    except FloatingPointError as error:  # a diverging individual is the worst one
        log.warning("ES individual %s diverged: %s", individual.values, error)
        fitness = -math.inf
    return fitness if math.isfinite(fitness) else -math.inf
