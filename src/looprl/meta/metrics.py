"""The metrics dictionary: the single information hub of a run (seed 001).

One plain ``dict`` per run, read and written by the loop, the agent and the meta components;
this list is the contract. Arrays are torch tensors, one row per env copy; *observation
rows* are one tensor ``[N, ...]`` (``looprl.meta.views``).

Written by the loop at the start:

* ``env``: the (vector) environment; ``policy``: the agent's ``Policy`` (read it, do not
  train it); ``model``: its network (``Policy.module``; where the learner runs, the trained
  one); ``buffer``: the learner's buffer (read it); ``agent``: in multi-agent runs, the agent
  this dictionary belongs to.

Written by the loop at every step or episode:

* ``step``: environment steps so far; ``episode``: training episodes completed so far.
* ``state`` (pre-step): the observation rows ``[B, ...]`` about to be acted on (none when
  every row ended its episode: they reset instead of stepping).
* ``transition`` (post-step): a dict, one row per env copy that stepped: ``state`` and
  ``next_state`` (observation rows), ``action``, ``reward`` (float ``[B]``), ``terminated``,
  ``truncated`` (bool ``[B]``), ``env_index`` (long ``[B]``) and ``env_step`` (an int).
  Components may change ``reward`` (the agent learns from it) and add keys
  (``intrinsic_reward``); a numeric one is logged as ``log/transition/<key>``, its mean over
  the logging interval's rows.
* ``explored`` (post-step): bool per row, whether the action was exploratory (value-based).
* ``episode_returns``, ``episode_lengths`` (post-episode): lists, of the episodes that just
  ended; ``ended``: bool tensor, which env copies just ended.

Written by the agent around an update:

* ``update``, ``batch`` (pre-update): updates so far; the ``SampleBatch`` ``[T + 1, B]`` the
  trainer is about to learn from (``obs``: observation rows); a component that replaces it
  has the trainer learn from its batch.
* ``losses`` (post-update): the trainer's statistics (``TrainerStepResult.stats``);
  ``td_error``: per-sample TD errors of the value methods (C51: the KL divergences; ``None``
  for policy-gradient methods); ``predictions``: dict of ``q_values`` / ``values`` /
  ``log_probs``; ``grad_norm``: per approximation, the gradient norm before clipping.

Written by anyone:

* ``hp/<name>``: the agent's hyperparameters (``looprl.meta.hyperparameters``), published
  before each hook; a changed value is applied before the next step or update.
* ``log/<name>``: a number, or a 0-d or 1-d tensor meaning its mean. The loop logs it after
  the post-episode hooks of a training episode (TensorBoard tag ``log/<name>``, a row of
  ``log.csv``) and removes it, so a component that aggregates over the interval starts anew
  when its key is gone. On Ray every actor's values are logged under the same keys.

On Ray, each actor writes the step and episode keys of its own dictionary (``env``: its env
copies) and the trainer worker the update keys of its own (``env``: ``None``).
"""
