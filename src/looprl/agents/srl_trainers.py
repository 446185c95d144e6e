"""SRL trainers (seed 004; issue 11): ``Trainer.step(SampleBatch) -> TrainerStepResult``.

Registered by name in ``looprl.agents`` (``Trainer(type_="ppo", policy=p, args=dict(...))``):

* ``"ppo"`` -- ``SRLPPOTrainer``: PPO on ``[T + 1, B]`` segments, GAE or V-trace targets.
* ``"ppg"`` -- ``SRLPPGTrainer``: PPO plus PPG's auxiliary phase.

Each class names the trainer-side buffer it needs in ``sample_buffer`` (``"on_policy"`` or
``"prioritized"``); ``looprl.memory.make_sample_buffer(trainer, ...)`` builds it. They use
the same loss functions as the local agents (``looprl.agents.losses``).
"""

from looprl.agents.srl_ppo import SRLPPGTrainer, SRLPPOTrainer

__all__ = ["SRLPPGTrainer", "SRLPPOTrainer"]
