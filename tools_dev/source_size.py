"""The size of ``src/`` at git revisions, by measures that layout does not move.

``wc -l`` counts layout as much as code: the same function written one argument per line or
in a hanging indent differs by a dozen lines. Beside it, this prints the Python statements
(AST), the tokens (comments and whitespace left out) and the docstring lines of every ``.py``
file under ``src/`` at each revision, read with ``git show`` (no checkout):

    python tools_dev/source_size.py 098f297 HEAD

Issue 20 asks that the source shrink against ``098f297``, the revision before it.
"""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import tokenize

_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER}
_DOCUMENTED = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def sizes(revision: str) -> dict[str, int]:
    """``lines``, ``statements``, ``tokens`` and ``docstring lines`` of ``src/`` at
    ``revision``."""
    files = subprocess.run(["git", "ls-tree", "-r", "--name-only", revision, "src"],
                           check=True, capture_output=True, text=True).stdout.split()
    total = dict.fromkeys(("lines", "statements", "tokens", "docstring lines"), 0)
    for path in (f for f in files if f.endswith(".py")):
        text = subprocess.run(["git", "show", f"{revision}:{path}"], check=True,
                              capture_output=True, text=True).stdout
        tree = ast.parse(text)
        total["lines"] += text.count("\n")
        total["statements"] += sum(isinstance(node, ast.stmt) for node in ast.walk(tree))
        total["tokens"] += sum(token.type not in _SKIPPED for token in
                               tokenize.generate_tokens(io.StringIO(text).readline))
        total["docstring lines"] += sum(
            ast.get_docstring(node, clean=False).count("\n") + 1 for node in ast.walk(tree)
            if isinstance(node, _DOCUMENTED) and ast.get_docstring(node, clean=False))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("revisions", nargs="+", help="git revisions, e.g. 098f297 HEAD")
    args = parser.parse_args()
    rows = {revision: sizes(revision) for revision in args.revisions}
    first = rows[args.revisions[0]]
    print(f"{'revision':12s}" + "".join(f"{key:>18s}" for key in first))
    for revision, row in rows.items():
        cells = "".join(f"{value:>10,d} ({100 * value / first[key] - 100:+5.1f}%)"
                        for key, value in row.items())
        print(f"{revision:12s}{cells}")


if __name__ == "__main__":
    main()
