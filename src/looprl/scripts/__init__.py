"""ALL's console scripts with ``looprl`` in place of ``all`` (``looprl-classic CartPole-v1 dqn``,
``python -m looprl.scripts.train_classic ...``): ALL's arguments, run by the code of ``looprl
train``, ``looprl plot`` and ``looprl watch`` (``looprl.cli``)."""
