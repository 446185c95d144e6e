"""Experiments: control loops, ``run_experiment``, logging, plots and watching."""

from looprl.experiments import watch
from looprl.experiments.experiment import Experiment, ParallelEnvExperiment, SingleEnvExperiment
from looprl.experiments.logger import ExperimentLogger
from looprl.experiments.multiagent import MultiagentEnvExperiment, play
from looprl.experiments.plots import plot_returns_100
from looprl.experiments.progress import TrainingProgress
from looprl.experiments.run import (
    ExperimentResult,
    SlurmExperiment,
    TrainingInterrupted,
    make_experiment,
    run_experiment,
)
from looprl.experiments.watch import load_and_watch

__all__ = ["Experiment", "ExperimentLogger", "ExperimentResult", "MultiagentEnvExperiment",
           "ParallelEnvExperiment", "SingleEnvExperiment", "SlurmExperiment", "TrainingInterrupted",
           "TrainingProgress", "load_and_watch", "make_experiment", "plot_returns_100",
           "run_experiment", "play", "watch"]
