"""Design specs: every built-in design is one, and every mistake in a spec is one line naming its place."""

import textwrap

import pytest

from killtest.harness.design.model import Launch
from killtest.harness.design.registry import built_in_designs, design_named
from killtest.harness.design.specfile import load_spec
from killtest.harness.errors import KilltestError

STORE = """
[store]
kind = "sqlite"
path = "{work_dir}/s.sqlite"
records = "SELECT sku, price FROM products"
"""


def write_spec(tmp_path, text, name="design.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_the_built_in_designs_and_the_whole_zoo_are_specs():
    assert {"naive", "idempotent"} <= set(built_in_designs())
    zoo = [name for name in built_in_designs() if name.startswith("zoo-")]
    assert len(zoo) >= 8
    assert all(built_in_designs()[name].claims_idempotence for name in zoo)
    assert built_in_designs()["naive"].control and not built_in_designs()["idempotent"].control


def test_placeholders_are_filled_for_each_start():
    design = built_in_designs()["idempotent"]
    argv = design.command(Launch("http://127.0.0.1:9", "/tmp/w", lease_s=3.0, crawl=2))
    assert argv[1:3] == ["-m", "killtest.scrapers.idempotent"]
    assert argv[3:] == ["--base", "http://127.0.0.1:9", "--db", "/tmp/w/idempotent.sqlite", "--lease", "3",
                        "--crawl", "2"]
    assert design.takes_lease and design.can_recrawl and not built_in_designs()["naive"].can_recrawl


def test_a_command_design_in_any_language_runs_from_its_spec_directory(tmp_path):
    path = write_spec(tmp_path, """
        [design]
        name = "mine"
        command = ["node", "{spec_dir}/scraper.mjs", "--site", "{base_url}", "--db", "{store}"]
        env = { MY_TOKEN = "{work_dir}/token" }
        """ + STORE)
    design = load_spec(path)
    launch = Launch("http://h:1", "/w", 1.0)
    assert design.module is None and design.spec_dir == str(tmp_path)
    assert design.command(launch) == ["node", f"{tmp_path}/scraper.mjs", "--site", "http://h:1", "--db", "/w/s.sqlite"]
    assert design.environment(launch)["MY_TOKEN"] == "/w/token"
    with pytest.raises(KilltestError, match="cannot be traced"):
        design.command(launch, traced=True)


def test_a_design_is_found_by_name_or_by_spec_path(tmp_path):
    path = write_spec(tmp_path, '[design]\nname = "mine"\nmodule = "my_scraper"\n' + STORE)
    assert design_named(path).name == "mine"
    with pytest.raises(KilltestError, match="unknown design 'nope'.*spec"):
        design_named("nope")


def test_extends_starts_from_another_spec_and_replaces_what_it_sets(tmp_path):
    base = write_spec(tmp_path, '[design]\nname = "base"\nmodule = "a"\nclaims_idempotence = true\n' + STORE,
                      "base.toml")
    child = load_spec(write_spec(tmp_path, f'extends = "{base}"\n[design]\nname = "child"\nmodule = "b"\n'))
    assert (child.name, child.module, child.claims_idempotence, child.store.records) == \
        ("child", "b", True, "SELECT sku, price FROM products")


@pytest.mark.parametrize("text, line, says", [
    ('[design]\nname = "x"\nmodul = "a"\n' + STORE, 3, "unknown key design.modul"),
    ('[design]\nname = "x"\nmodule = "a"\ncommand = ["b"]\n' + STORE, 1, "exactly one of module"),
    ('[design]\nname = "x"\ncommand = ["b", "{base}"]\n' + STORE, 3, "uses {base}; the placeholders are"),
    ('[design]\nname = "x y"\nmodule = "a"\n' + STORE, 2, "may hold only letters"),
    ('[design]\nname = "x"\nmodule = "a"\n' + STORE.replace('"sqlite"', '"mongo"'), 6, "store.kind 'mongo'"),
    ('[design]\nname = "x"\nmodule = "a"\n' + STORE + 'fields = ["colour"]\n', 9, "does not show; it shows: price"),
    ('[design]\nname = "x"\nmodule = "a"\ncontrol = true\nclaims_idempotence = true\n' + STORE, 4,
     "a control (control = true) promises nothing"),
    ('[design]\nname = "x"\nmodule = "a"\ndoes_not_promise = ["dupes"]\n' + STORE, 4,
     "names 'dupes', which is not a promise a design can waive; the names: no_lost_records"),
    ('[design]\nname = "x"\nmodule = "a"\ndoes_not_promise = ["finishes"]\n' + STORE, 4,
     "names 'finishes', which is not a promise a design can waive"),
    ('[design]\nname = "x"\nmodule = "a"\ndoes_not_promise = "all"\n' + STORE, 4,
     "design.does_not_promise is a list of promise names"),
    ('[design]\nname = "x"\nmodule = "a"\n[stor]\nkind = "sqlite"\n', 4, "unknown table [stor]"),
    ('[design]\nname = "x"\nmodule = "a"\n', None, "missing the [store] table"),
    ('[design]\nname = "x"\nmodule = "a"\n[store]\nkind = "jsonl"\n', 4, "a jsonl store needs path"),
    ('[design]\nname = "x"\nmodule = "a"\n' + STORE + 'leases = 3\n', 9, "store.leases must be a non-empty string"),
    ('[design\nname = "x"', None, "not a valid TOML file"),
])
def test_each_mistake_in_a_spec_names_its_line(tmp_path, text, line, says):
    path = write_spec(tmp_path, text)
    with pytest.raises(KilltestError) as error:
        load_spec(path)
    message = str(error.value)
    assert says in message and "\n" not in message
    assert message.startswith(f"{path}:{line}: " if line else f"{path}: ")


def test_a_spec_that_extends_itself_is_refused(tmp_path):
    path = write_spec(tmp_path, 'extends = "design.toml"\n[design]\nname = "x"\nmodule = "a"\n' + STORE)
    with pytest.raises(KilltestError, match="goes round in a circle"):
        load_spec(path)


def test_a_missing_spec_file_is_a_clear_error(tmp_path):
    with pytest.raises(KilltestError, match="cannot read the design spec"):
        load_spec(str(tmp_path / "absent.toml"))


def test_set_args_changes_one_argument_and_keeps_every_other(tmp_path):
    write_spec(tmp_path, '[design]\nname = "base"\nmodule = "a"\n'
                         'args = ["--db", "{store}", "--lock=5", "--keep", "1"]\n' + STORE, "base.toml")
    child = load_spec(write_spec(tmp_path, 'extends = "base.toml"\n[design]\nname = "child"\n'
                                           'set_args = { "--db" = "{work_dir}/other", "--lock" = "9", "--new" = "2",'
                                           ' "--switch" = true }\n'))
    assert child.args == ("--db", "{work_dir}/other", "--lock=9", "--keep", "1", "--new", "2", "--switch")


def test_set_args_changes_a_commands_argv_and_a_flag_already_there_is_not_added_twice(tmp_path):
    path = write_spec(tmp_path, '[design]\nname = "x"\ncommand = ["node", "s.mjs", "--fast", "--n", "1"]\n'
                                'set_args = { "--fast" = true, "--n" = "2" }\n' + STORE)
    assert load_spec(path).command_template == ("node", "s.mjs", "--fast", "--n", "2")


@pytest.mark.parametrize("design, line, says", [
    ('module = "a"\nargs = ["--n", "1"]\nset_args = { "--n" = 2 }\n', 5, "design.set_args is a table"),
    ('module = "a"\nset_args = { "--n" = "2" }\n', 4, "neither this spec nor the one it extends"),
    ('module = "a"\nargs = ["--n", "1"]\nset_args = { "--n" = "{nope}" }\n', 5, "uses {nope}"),
])
def test_a_mistake_in_set_args_names_its_line(tmp_path, design, line, says):
    path = write_spec(tmp_path, '[design]\nname = "x"\n' + design + STORE)
    with pytest.raises(KilltestError) as error:
        load_spec(path)
    assert str(error.value).startswith(f"{path}:{line}: ") and says in str(error.value)


def _flag_values(args):
    """{flag: the word after it, or None for a flag followed by another flag or by nothing}."""
    return {word: (args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("--") else None)
            for i, word in enumerate(args) if word.startswith("--")}


@pytest.mark.parametrize("child, overrides", [
    ("queue-bullmq-2h", {"--lock-ms": "120000", "--renew-ms": "30000"}),
    ("zoo-queue-set-only", {"--trust-the-set": None}),
])
def test_the_queue_children_carry_every_base_argument_they_do_not_override(child, overrides):
    base, design = _flag_values(design_named("queue-bullmq").args), _flag_values(design_named(child).args)
    assert base["--max-stalled"] == "10"  # the argument both children once lost when the base gained it
    kept = {flag: value for flag, value in base.items() if flag not in overrides}
    assert {flag: value for flag, value in design.items() if flag not in overrides} == kept
    assert {flag: design[flag] for flag in overrides} == overrides


def test_the_built_in_registry_reads_no_spec_until_a_design_is_asked_for():
    import subprocess
    import sys

    probe = ("import killtest.harness.design.registry as r; import killtest.harness.design.stores;"
             " assert r._read_built_ins.cache_info().currsize == 0, 'read at import'")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_broken_built_in_spec_is_one_line_when_a_design_is_looked_up(tmp_path, monkeypatch):
    from killtest.harness.design import registry

    (tmp_path / "zoo").mkdir()
    write_spec(tmp_path, '[design]\nname = "fine"\nmodule = "a"\n' + STORE, "fine.toml")
    broken = write_spec(tmp_path, '[design]\nname = "broken"\nmodul = "a"\n' + STORE, "zoo/broken.toml")
    monkeypatch.setattr(registry, "BUILT_IN_FOLDER", str(tmp_path))
    for look_up in (lambda: registry.design_named("fine"), lambda: registry.built_in_designs()["fine"],
                    registry.built_in_designs):
        with pytest.raises(KilltestError) as error:
            look_up()
        assert str(error.value).startswith(f"{broken}:3: unknown key design.modul") and "\n" not in str(error.value)


def test_two_built_in_specs_with_one_name_are_refused(tmp_path):
    from killtest.harness.design.registry import built_in_designs

    write_spec(tmp_path, '[design]\nname = "same"\nmodule = "a"\n' + STORE, "a.toml")
    second = write_spec(tmp_path, '[design]\nname = "same"\nmodule = "b"\n' + STORE, "b.toml")
    with pytest.raises(KilltestError, match=rf"^{second}: design.name 'same' is already the name of .*a.toml"):
        built_in_designs(str(tmp_path))


def test_spec_keys_describe_every_key_a_spec_may_hold_in_one_line():
    from killtest.harness.design.specfile import DESIGN_KEYS, SPEC_KEYS, STORE_KEYS

    assert set(SPEC_KEYS) == {"", "design", "store", "site", "servers"}
    assert DESIGN_KEYS == set(SPEC_KEYS["design"]) and STORE_KEYS == set(SPEC_KEYS["store"])
    assert "set_args" in DESIGN_KEYS and "extends" in SPEC_KEYS[""]
    assert all(text and "\n" not in text for keys in SPEC_KEYS.values() for text in keys.values())
