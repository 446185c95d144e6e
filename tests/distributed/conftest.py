"""The distributed tests need Ray: a real local instance (``local_ray``, in
``tests/conftest.py``: loopback only, shared by consecutive modules that use it).
``looprl.distributed`` is imported first: it sets ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``,
which Ray reads when it is imported."""

from __future__ import annotations

import pytest

import looprl.distributed  # noqa: F401  (before Ray: a local instance on loopback only)

ray = pytest.importorskip("ray")
