"""Design specs: every built-in design is one, and every mistake in a spec is one line naming its place."""

import textwrap

import pytest

from harness.design.model import Launch
from harness.errors import KilltestError
from harness.design.registry import BUILT_IN_DESIGNS, design_named
from harness.design.specfile import load_spec

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
    assert {"naive", "idempotent"} <= set(BUILT_IN_DESIGNS)
    zoo = [name for name in BUILT_IN_DESIGNS if name.startswith("zoo-")]
    assert len(zoo) >= 8
    assert all(BUILT_IN_DESIGNS[name].claims_idempotence for name in zoo)
    assert BUILT_IN_DESIGNS["naive"].control and not BUILT_IN_DESIGNS["idempotent"].control


def test_placeholders_are_filled_for_each_start():
    design = BUILT_IN_DESIGNS["idempotent"]
    argv = design.command(Launch("http://127.0.0.1:9", "/tmp/w", lease_s=3.0, crawl=2))
    assert argv[1:3] == ["-m", "scrapers.idempotent"]
    assert argv[3:] == ["--base", "http://127.0.0.1:9", "--db", "/tmp/w/idempotent.sqlite", "--lease", "3",
                        "--crawl", "2"]
    assert design.takes_lease and design.can_recrawl and not BUILT_IN_DESIGNS["naive"].can_recrawl


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
     "design.control is true only"),
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
