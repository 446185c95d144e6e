"""The distributed tests need Ray: a real local instance (``local_ray``, in
``tests/conftest.py``: loopback only, shared by consecutive modules that use it)."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")
