"""One CLI a person can learn (issue 12 item 6): the commands are grouped by what their user does,
README.md's commands table and ``--help`` say the same, and the previous release's names still
run, hidden from ``--help``."""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import re
from pathlib import Path

import pytest

import services.cli as cli
from services.cli import OLD_NAMES, build_parser

ROOT = Path(__file__).resolve().parents[2]
WORD = re.compile(r"[a-z][a-z0-9-]*(\|[a-z][a-z0-9-]*)*")
TOP = ("table", "shoe", "coup", "stake", "round", "match", "account", "report", "regulator",
       "health", "demo", "serve", "web", "credentials", "keys", "store", "rules", "odds")


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def visible(parser: argparse.ArgumentParser | None = None, path: tuple[str, ...] = ()
            ) -> list[str]:
    """Every command --help shows, groups and leaves, as its words."""
    parser = parser or build_parser()
    sub = _subcommands(parser)
    if sub is None:
        return []
    found = []
    for action in sub._choices_actions:
        name = action.dest
        found.append(" ".join((*path, name)))
        found += visible(sub.choices[name], (*path, name))
    return found


def leaves() -> list[str]:
    shown = visible()
    return [c for c in shown if not any(o.startswith(c + " ") for o in shown)]


def readme_commands() -> list[str]:
    """The command paths of README.md's commands table (``sabot store report day|shoes`` is
    two)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Commands"):]
    section = section[:section.index("\n## ", 1)]
    shown = set(visible())
    paths: list[str] = []
    for line in section.splitlines():
        match = re.match(r"\| `sabot ([^`]*)`", line)
        if not match:
            continue
        words: list[list[str]] = []
        for word in match.group(1).replace("\\|", "|").split():
            if not WORD.fullmatch(word):
                break
            options = word.split("|")
            prefixes = [" ".join(p) for p in itertools.product(*words)] or [""]
            if not any(f"{p} {options[0]}".strip() in shown for p in prefixes):
                break  # an argument, not a command
            words.append(options)
        assert words, line
        paths += [" ".join(p) for p in itertools.product(*words)]
    return paths


def _help(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            build_parser().parse_args([*argv, "--help"])
        except SystemExit as exc:
            return int(exc.code or 0), out.getvalue()
    return 0, out.getvalue()


def test_the_top_level_is_the_groups() -> None:
    top = [c for c in visible() if " " not in c]
    assert top == list(TOP)
    code, text = _help([])
    assert code == 0
    listed = set(re.findall(r"^    (\S+)", text, re.M))
    choices = re.search(r"\{([a-z,-]+)\}", text)
    assert choices and listed == set(choices.group(1).split(",")) == set(TOP)


def test_every_readme_command_is_a_command() -> None:
    shown = set(visible())
    listed = readme_commands()
    assert listed
    wrong = [c for c in listed if c not in shown]
    assert not wrong, f"README.md names commands --help does not show: {wrong}"
    for command in listed:
        assert _help(command.split())[0] == 0, command


def test_every_command_is_in_the_readme() -> None:
    listed = set(readme_commands())
    missing = [c for c in leaves() if c not in listed]
    assert not missing, f"commands missing from README.md's commands table: {missing}"
    assert set(TOP) <= {c.split()[0] for c in listed}


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_an_old_name_runs_the_new_command_and_is_hidden(old: str) -> None:
    parser = build_parser()
    sub = _subcommands(parser)
    assert sub is not None
    new = parser
    for word in OLD_NAMES[old].split():
        found = _subcommands(new)
        assert found is not None
        new = found.choices[word]
    assert sub.choices[old] is new
    assert old not in [a.dest for a in sub._choices_actions]
    assert _help([old])[0] == 0


def test_the_old_offline_reports_still_read_the_store() -> None:
    parser = build_parser()
    old = parser.parse_args(["report", "day", "--store", "sqlite:///x.db", "--day",
                             "2026-01-02", "--format", "csv"])
    new = parser.parse_args(["store", "report", "day", "--store", "sqlite:///x.db", "--day",
                             "2026-01-02", "--format", "csv"])
    assert old.func is new.func and old.day == new.day == "2026-01-02"
    online = parser.parse_args(["report", "day", "2026-01-02"])
    assert online.func is not new.func and online.gaming_day == "2026-01-02"


def test_an_unknown_command_names_only_the_shown_ones(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    assert cli.main(["ledger-balancez"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'store'" in err and "'ledger-balances'" not in err


def test_a_game_adds_its_commands_with_one_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """A game's module registers into the groups (``sub.group``) whatever its place."""
    import sys
    import types

    module = types.ModuleType("services.cli.game_for_test")

    def register(sub: cli.Commands) -> None:
        p = sub.group("rules").group("game-for-test", "a game for the test").add_parser(
            "hand", help="a hand")
        p.set_defaults(func=lambda args: 0)
        sub.group("store").add_parser("game-for-test", help="its store command")

    module.register = register  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(cli, "COMMAND_MODULES", (module.__name__, *cli.COMMAND_MODULES))
    shown = visible()
    assert "rules game-for-test hand" in shown and "store game-for-test" in shown
    assert cli.main(["rules", "game-for-test", "hand"]) == 0


def test_the_readme_settings_table_is_the_settings() -> None:
    from services.settings import markdown_table

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert markdown_table() in text
