"""The one table of options: argparse, the [zoo] keys and the replay lines all come from it, so they agree."""

from __future__ import annotations

import argparse
import shlex

import pytest

from killtest.harness import defaults
from killtest.harness.cli import COMMANDS, build_parser
from killtest.harness.faults.zoo_scenarios import Scenario, zoo_entries
from killtest.harness.options import (
    COMMAND_NAMES,
    GROUPS,
    OPTIONS,
    ZOO_KEYS,
    ZOO_SCENARIO_KEYS,
    options_of,
    replay_words,
)


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    [commands] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def _replay(line: str) -> argparse.Namespace:
    words = shlex.split(line)
    assert words[:2] == ["killtest", "replay"]
    return build_parser().parse_args(words[1:])


def test_the_table_names_every_command_and_every_group():
    assert list(COMMANDS) == list(COMMAND_NAMES) == list(_subparsers())
    assert {option.group for option in OPTIONS} - {None} <= set(GROUPS)
    assert {command for option in OPTIONS for command in option.commands} <= set(COMMAND_NAMES)


@pytest.mark.parametrize("command", COMMAND_NAMES)
def test_every_flag_of_every_command_comes_from_the_table(command):
    parser = _subparsers()[command]
    taken = {action.option_strings[0]: action for action in parser._actions
             if action.option_strings and action.dest != "help"}
    table = {option.flag: option for option in options_of(command)}
    assert set(taken) == set(table)  # and a flag twice for one command would have been an argparse error
    for flag, option in table.items():
        assert (taken[flag].help, taken[flag].dest, taken[flag].required) == (option.help, option.dest, option.required)
        if not option.required:
            expected = list(option.default) if isinstance(option.default, tuple) else option.default
            assert taken[flag].default == expected, flag


@pytest.mark.parametrize("option", [o for o in OPTIONS if isinstance(o.default, (int, float))
                                    and not isinstance(o.default, bool)], ids=lambda o: f"{o.flag}-{o.commands[0]}")
def test_a_numeric_default_is_the_one_its_help_text_names(option):
    assert f"(default {option.default:g}" in option.help


def test_every_zoo_key_is_an_option_of_replay_or_says_what_the_scenario_is_about():
    replayed = {option.zoo_key: option for option in options_of("replay") if option.replayed and option.zoo_key}
    assert set(ZOO_KEYS) == set(ZOO_SCENARIO_KEYS) | set(replayed)
    assert len([o for o in OPTIONS if o.zoo_key]) == len(replayed)  # each key sets one option
    assert all(ZOO_KEYS[key] for key in ZOO_KEYS)  # each has a line for the reference docs


@pytest.mark.parametrize("entry", zoo_entries(), ids=lambda entry: entry.design.name)
def test_a_zoo_replay_line_parses_back_into_the_scenarios_settings(entry):
    scenario: Scenario = entry.scenario
    args = _replay(scenario.replay_command(entry.design.name))
    assert args.design == [entry.design.name] and args.schedule == scenario.schedule
    assert (args.listing_pages, args.per_page) == (defaults.ZOO_LISTING_PAGES, defaults.ZOO_PER_PAGE)
    assert (args.lease, args.time_limit, args.recrawls) == (scenario.lease_s, scenario.time_limit_s, scenario.recrawls)
    assert args.no_prefork is True
    assert (args.drift or "") == scenario.drift
    if scenario.drift:
        assert args.drift_seed == defaults.ZOO_DRIFT_SEED
    assert [tuple(text.split("=")) for text in args.slow_page] == [(p, f"{s:g}") for p, s in scenario.slow_pages]


def test_a_replay_line_reads_the_same_as_the_zoo_printed_it_before_the_table():
    scenario = Scenario(schedule="r2", control_schedule="r2", lease_s=2.0, recrawls=1, drift="changed=0.5",
                        slow_pages=(("/product/1", 0.6),))
    assert scenario.replay_command("zoo-x") == (
        "killtest replay --design zoo-x --schedule r2 --listing-pages 2 --per-page 3 --lease 2 --time-limit 20"
        " --no-prefork --recrawls 1 --drift changed=0.5 --drift-seed 1 --slow-page /product/1=0.6")


def test_replay_words_leave_out_what_was_not_set_and_refuse_what_replay_cannot_take():
    assert replay_words({"design": "d", "schedule": "r5", "lease": 0.2, "recrawls": None, "no_prefork": False,
                         "slow_page": []}) == ["--design", "d", "--schedule", "r5", "--lease", "0.2"]
    with pytest.raises(ValueError, match="--out|out"):
        replay_words({"out": "results"})


def test_no_room_keeps_a_default_of_its_own():
    """Defaults live in harness/defaults.py alone; a room that names one again could drift from it."""
    import ast
    import glob
    import os

    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "harness")
    own = []
    for path in glob.glob(os.path.join(root, "**", "*.py"), recursive=True):
        if os.path.basename(path) == "defaults.py":
            continue
        for node in ast.parse(open(path, encoding="utf-8").read()).body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id.startswith("DEFAULT_")
                                                    for t in node.targets):
                own.append(f"{os.path.relpath(path, root)}:{node.lineno}")
    assert own == []
