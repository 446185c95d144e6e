"""Function approximation: ``Approximation`` and its wrappers, targets, schedules."""

__all__ = ["LR_SCHEDULES", "Approximation", "Checkpointer", "DummyCheckpointer", "ExpectedQ",
           "FeatureModule", "FeatureNetwork", "FixedTarget", "Identity", "JointApproximation",
           "LinearScheduler", "PeriodicCheckpointer", "PolyakTarget", "ProgressLR",
           "QContinuous", "QDist", "QDistModule", "QModule", "QNetwork", "Schedulable",
           "Schedule", "TargetNetwork", "TrivialTarget", "VModule", "VNetwork", "Warmup", "anneal",
           "check_lr_schedule", "gather_actions", "linear_schedule", "project_distribution"]

from looprl.approximation.approximation import Approximation, Identity, JointApproximation
from looprl.approximation.q_continuous import QContinuous
from looprl.approximation.q_dist import ExpectedQ, QDist, QDistModule, project_distribution
from looprl.approximation.q_network import (
    FeatureModule,
    FeatureNetwork,
    QModule,
    QNetwork,
    VModule,
    VNetwork,
    gather_actions,
)
from looprl.approximation.schedules import (
    LR_SCHEDULES,
    LinearScheduler,
    ProgressLR,
    Schedulable,
    Schedule,
    Warmup,
    anneal,
    check_lr_schedule,
    linear_schedule,
)
from looprl.approximation.target import (
    Checkpointer,
    DummyCheckpointer,
    FixedTarget,
    PeriodicCheckpointer,
    PolyakTarget,
    TargetNetwork,
    TrivialTarget,
)
