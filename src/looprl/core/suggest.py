"""Close-match suggestions for one-line error messages about names."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, choices: Iterable[str], n: int = 1) -> str:
    """``" Did you mean 'x'?"`` naming up to ``n`` close matches of ``name``, or ``""``."""
    close = difflib.get_close_matches(name, list(choices), n=n, cutoff=0.6)
    return f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
