"""The metrics dictionary: the single information hub of a run (seed 001).

One plain ``dict`` per run. The loop, the agent and the meta components read and write it;
this table is the contract. Batched entries have one row per environment copy (a single
environment has one row).

Every loop and runtime hands the hooks the same forms (the hub converts once,
``looprl.meta.views``), so a component never checks what it was given: arrays are torch
tensors, and *observation rows* are one tensor ``[N, ...]`` per key: an SRL environment's
field ``obs`` (a multi-agent agent's hooks: in its own view), ``float32`` for floating
observations (``float64`` is converted), ``uint8`` frames as they are.

=========================== ===================== ============================================
key                          written by            contents
=========================== ===================== ============================================
``env``                      loop, at the start    the (vector) environment being trained in
``policy``                   loop, at the start    the agent's ``Policy`` (to score states, as
                                                   PLR does: read it, do not train it)
``model``                    loop, at the start    the policy's network (``Policy.module``;
                                                   where the learner runs, the trained one)
``buffer``                   loop, at the start    the learner's replay or on-policy buffer
                                                   (read it; the learner writes it)
``agent``                    loop, at the start    multi-agent runs: the agent this
                                                   dictionary belongs to (one per agent)
``step``                     loop, every step      environment steps taken so far (frames)
``episode``                  loop, every episode   training episodes completed so far
``state``                    loop, pre-step        the observations about to be acted on:
                                                   observation rows ``[B, ...]``, one per
                                                   env copy
``transition``               loop, post-step       dict of tensors, one row per env copy
                                                   that stepped: ``state`` and
                                                   ``next_state`` (observation rows
                                                   ``[B, ...]``), ``action`` (``[B, ...]``),
                                                   ``reward`` (float ``[B]``),
                                                   ``terminated``, ``truncated`` (bool
                                                   ``[B]``), ``env_index`` (the env copy of
                                                   each row: long ``[B]``), and
                                                   ``env_step`` (an int). Components
                                                   may change ``reward`` (the agent learns
                                                   from it) and add keys
                                                   (``intrinsic_reward``): a numeric one
                                                   (a number, a tensor of one value per
                                                   row) is logged as
                                                   ``log/transition/<key>``, its mean over
                                                   the logging interval's rows.
``explored``                 loop, post-step       a bool tensor, one per row acted on: the
                             (from the             action just taken was exploratory
                             exploration policy)   (value-based agents)
``episode_returns``          loop, post-episode    returns of the episodes that just ended
                                                   (a list of floats)
``episode_lengths``          loop, post-episode    their lengths in steps (a list of ints)
``ended``                    loop, post-episode    which env copies just ended (a bool
                                                   tensor, one per env copy)
``update``                   agent, pre-update     updates taken so far
``batch``                    agent, pre-update     the batch the trainer is about to learn
                                                   from: a ``SampleBatch`` of ``[T + 1, B]``
                                                   rows whose fields are tensors, ``obs``
                                                   the observation rows
                                                   ``[T + 1, B, ...]``. It shares the
                                                   trainer's tensors where no conversion was
                                                   needed; a component that replaces it has
                                                   the trainer learn from its batch
``losses``                   agent, post-update    dict of the trainer's statistics
                                                   (``TrainerStepResult.stats``: floats)
``td_error``                 agent, post-update    per-sample TD errors ``target - Q(s, a)``
                                                   of every update of the value methods,
                                                   whatever the buffer (DQN family; DDPG,
                                                   TD3, SAC: of ``Q1``; C51: the
                                                   cross-entropies); ``None`` for the
                                                   policy-gradient methods (PPO, A2C...)
``predictions``              agent, post-update    dict: ``q_values`` / ``values`` /
                                                   ``log_probs`` the update computed
``grad_norm``                agent, post-update    dict: per approximation (``q``, ``actor``...)
                                                   the gradient norm of the last optimizer
                                                   step, before clipping (a tensor)
``hp/<name>``                hub, before each      the agent's hyperparameters (``hp/lr``,
                             hook; anyone may      ``hp/epsilon``, ``hp/discount``,
                             change them           ``hp/batch_size``, ...): a changed value is
                                                   applied before the next step or update.
``log/<name>``               any component, any    a scalar to log: a number, or a 0-d or 1-d
                             hook                  tensor meaning its mean. Writing the key is
                                                   all it takes: the loop logs it as the
                                                   TensorBoard tag ``log/<name>`` and a row
                                                   of ``log.csv`` (``frame,name,value``) in
                                                   the run directory, then removes it.
=========================== ===================== ============================================

Logging ``log/*`` keys: after the post-episode hooks of a training episode (the logging
interval) the loop logs the value each key holds and removes it, so a component that
aggregates over the interval (RND's mean intrinsic reward) starts anew when its key is gone.
Each component's docstring names the keys it logs. Schedules log the value they set last
(``log/schedule/lr``). On Ray every actor takes its values at its episodes' ends too; they
are logged under the same keys, one series over all actors (the trainer's at each poll), and
each worker's latest are in ``results.json``'s ``train.meta``.

On Ray, each actor's collector (``EnvRunner``) writes the step and episode keys of its own
dictionary (``transition`` has one row per stream that stepped, ``env_index`` naming its
copy; ``env`` is the list of its env copies, ``policy`` its policy copy), and the trainer
worker the update keys of its own (``batch`` in the form above, made from the actors'
segments; ``env`` is ``None``).
"""
