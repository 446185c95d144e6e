"""Function approximation: ``Approximation`` and its wrappers, targets, schedules."""

from looprl.approximation.approximation import Approximation, JointApproximation
from looprl.approximation.checkpointer import Checkpointer, DummyCheckpointer, PeriodicCheckpointer
from looprl.approximation.feature_network import FeatureModule, FeatureNetwork
from looprl.approximation.identity import Identity
from looprl.approximation.q_continuous import QContinuous
from looprl.approximation.q_dist import ExpectedQ, QDist, QDistModule, project_distribution
from looprl.approximation.q_network import QModule, QNetwork, gather_actions
from looprl.approximation.schedules import (
    LinearScheduler,
    ProgressLR,
    Schedulable,
    Schedule,
    linear_schedule,
)
from looprl.approximation.target import FixedTarget, PolyakTarget, TargetNetwork, TrivialTarget
from looprl.approximation.v_network import VModule, VNetwork

__all__ = ["Approximation", "Checkpointer", "DummyCheckpointer", "ExpectedQ", "FeatureModule",
           "FeatureNetwork", "FixedTarget", "Identity", "JointApproximation", "LinearScheduler",
           "PeriodicCheckpointer", "PolyakTarget", "ProgressLR", "QContinuous", "QDist",
           "QDistModule", "QModule", "QNetwork", "Schedulable", "Schedule", "TargetNetwork",
           "TrivialTarget", "VModule", "VNetwork", "gather_actions", "linear_schedule",
           "project_distribution"]
