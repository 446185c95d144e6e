"""``looprl run``'s command line as Hydra reads it: its flags (``HYDRA_FLAGS``), its
``key=value`` overrides (``split_flags``, ``override_pairs``) and their grammar
(``check_grammar``)."""

from __future__ import annotations

__all__ = ["HYDRA_FLAGS", "VALUED_FLAGS", "check_grammar", "override_pairs", "split_flags"]

#: Hydra's flags that take a value as the next argument (``--cfg job``, ``-p PACKAGE``)
VALUED_FLAGS = frozenset({"--cfg", "-c", "--package", "-p", "--info", "-i", "--config-path",
                          "-cp", "--config-name", "-cn", "--config-dir", "-cd",
                          "--experimental-rerun"})
#: Hydra 1.3's command-line flags (hydra.cc: "Hydra's command line flags")
HYDRA_FLAGS = (*sorted(VALUED_FLAGS), "--help", "-h", "--hydra-help", "--version", "--resolve",
               "--run", "-r", "--multirun", "-m", "--shell-completion", "-sc")


def split_flags(argv: list[str] | tuple[str, ...]) -> tuple[list[str], list[str]]:
    """``argv``'s Hydra flags with their values, and its overrides, each in their order."""
    flags: list[str] = []
    overrides: list[str] = []
    skip = False
    for arg in argv:
        if skip and "=" not in arg:  # the flag's value (``--info`` may come without one)
            skip = False
            flags.append(arg)
            continue
        skip = arg in VALUED_FLAGS
        (flags if arg.startswith("-") else overrides).append(arg)
    return flags, overrides


def override_pairs(argv: list[str] | tuple[str, ...]) -> list[tuple[str, str]]:
    """``(key, value)`` of each ``key=value`` override of ``argv`` (prefixes ``+``, ``~``
    dropped), without Hydra's flags and their values."""
    return [(key, value) for key, _, value in
            (arg.lstrip("+~").partition("=") for arg in split_flags(argv)[1])]


def check_grammar(argv: list[str] | tuple[str, ...]) -> None:
    """A one-line ``ValueError`` naming an override Hydra's grammar cannot read (Hydra's own
    names none: "mismatched input '=' expecting <EOF>")."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException
    parser, argv = OverridesParser.create(), list(argv)
    if "--resume" in argv:  # (looprl's flag: its value is a path)
        del argv[argv.index("--resume") + 1:argv.index("--resume") + 2]
    for override in [o for o in split_flags(argv)[1] if "=" in o]:  # (a bare key: an unknown
        try:  # key, ``check_overrides`` says; ~key: Hydra deletes it)
            parser.parse_overrides([override])
        except OverrideParseException as error:
            why = [line for line in str(error).splitlines()
                   if not line.startswith(("Error parsing override", "See https://"))]
            raise ValueError(
                f"Cannot read the override {override!r} ({'; '.join(why)}): quote a value "
                "that holds '=', spaces or brackets as text (key='a=b'; in the shell "
                "\"key='a=b'\"), and close each [ and {; see Hydra's override grammar, "
                "https://hydra.cc/docs/advanced/override_grammar/basic/") from None
