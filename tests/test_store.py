"""Reading a design's store as its spec says: the registry of store kinds, each kind's spec rules, SQLite
and JSON lines, and clear errors for a wrong spec."""

import json
import sqlite3

import pytest

from killtest.harness.design.model import Launch
from killtest.harness.design.specfile import STORE_KEYS, load_spec
from killtest.harness.design.stores import held_leases, kind_of, store_kinds, stored_records
from killtest.harness.errors import KilltestError
from killtest.harness.servers.for_stores import SERVERS


def spec(tmp_path, store):
    path = tmp_path / "design.toml"
    path.write_text('[design]\nname = "mine"\nmodule = "mine"\n\n[store]\n' + store)
    return load_spec(str(path)), str(path)


def sqlite_store(tmp_path, rows):
    db_path = tmp_path / "s.sqlite"
    db = sqlite3.connect(db_path)
    db.execute("CREATE TABLE products (sku TEXT, cost REAL, name TEXT, at REAL)")
    db.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", rows)
    db.commit()
    db.close()
    return str(db_path)


def test_sqlite_columns_are_mapped_to_the_sites_fields_by_the_spec(tmp_path):
    design, _ = spec(tmp_path, 'kind = "sqlite"\npath = "{work_dir}/s.sqlite"\n'
                               'records = "SELECT sku, cost, name, at FROM products"\n'
                               'fields = { price = "cost", name = "name" }\nwritten_at = "at"\n')
    store = sqlite_store(tmp_path, [("SKU-1", 12.5, "Product 1", 1000.0)])
    [record] = stored_records(design, store)
    assert (record.key, record.fields, record.written_at) == ("SKU-1", {"price": "12.5", "name": "Product 1"}, 1000.0)


def test_a_store_not_created_yet_holds_nothing(tmp_path):
    design, _ = spec(tmp_path, 'kind = "sqlite"\npath = "{work_dir}/s.sqlite"\nrecords = "SELECT sku, price FROM t"\n'
                               'leases = "SELECT path FROM frontier"\n')
    assert stored_records(design, str(tmp_path / "absent.sqlite")) == []
    sqlite3.connect(tmp_path / "empty.sqlite").close()  # created, killed before its schema
    assert stored_records(design, str(tmp_path / "empty.sqlite")) == []
    assert held_leases(design, str(tmp_path / "empty.sqlite")) == []


def test_a_records_query_that_fails_names_its_spec_line(tmp_path):
    design, path = spec(tmp_path, 'kind = "sqlite"\npath = "{work_dir}/s.sqlite"\n'
                                  'records = "SELECT sku, prise FROM products"\n')
    with pytest.raises(KilltestError, match=rf"^{path}:8: store.records failed on the store: no such column: prise"):
        stored_records(design, sqlite_store(tmp_path, []))


def test_a_key_column_the_query_does_not_return_names_its_spec_line(tmp_path):
    design, path = spec(tmp_path, 'kind = "sqlite"\npath = "{work_dir}/s.sqlite"\n'
                                  'records = "SELECT sku AS id, cost AS price FROM products"\n')
    with pytest.raises(KilltestError, match=rf"^{path}:6: store.key names 'sku', but the records hold only: id, price"):
        stored_records(design, sqlite_store(tmp_path, [("SKU-1", 1.0, "n", 0.0)]))


def test_json_lines_are_records_and_a_torn_line_is_an_unreadable_row(tmp_path):
    design, _ = spec(tmp_path, 'kind = "jsonl"\npath = "{work_dir}/r.jsonl"\nfields = ["price"]\n')
    store = tmp_path / "r.jsonl"
    store.write_text(json.dumps({"sku": "SKU-1", "price": "1.00"}) + "\n" + '{"sku": "SKU-2", "pri')
    records = stored_records(design, str(store))
    assert [(r.key, r.fields) for r in records] == [("SKU-1", {"price": "1.00"}), (None, {})]
    assert "line 2 is not JSON" in records[1].unreadable


def test_a_directory_of_json_files_is_one_record_a_file_and_metadata_is_skipped(tmp_path):
    design, _ = spec(tmp_path, 'kind = "json_files"\npath = "{work_dir}/dataset"\nfields = ["price"]\n')
    dataset = tmp_path / "dataset"
    assert stored_records(design, str(dataset)) == []  # killed before the framework made its directory
    dataset.mkdir()
    (dataset / "000000001.json").write_text(json.dumps({"sku": "SKU-1", "price": "1.00"}))
    (dataset / "000000002.json").write_text('{"sku": "SKU-2", "pr')
    (dataset / "__metadata__.json").write_text(json.dumps({"item_count": 2}))
    records = stored_records(design, str(dataset))
    assert [(r.key, r.fields) for r in records] == [("SKU-1", {"price": "1.00"}), (None, {})]
    assert "file 000000002.json is not JSON" in records[1].unreadable


def test_a_json_files_store_takes_no_query(tmp_path):
    with pytest.raises(KilltestError, match="a json_files store has no query: each file is one record"):
        spec(tmp_path, 'kind = "json_files"\npath = "{work_dir}/d"\nrecords = "SELECT 1"\n')


def test_every_store_kind_is_registered_with_rules_only_for_known_keys_and_a_known_server():
    assert set(store_kinds()) == {"sqlite", "jsonl", "json_files", "postgres", "redis"}
    for name in store_kinds():
        kind = kind_of(name)
        assert kind.name == name and kind.description and "\n" not in kind.description
        assert set(kind.spec_rules) <= STORE_KEYS - {"kind"}
        assert kind.server is None or kind.server in SERVERS
    assert {name for name in store_kinds() if kind_of(name).server} == {"postgres", "redis"}
    with pytest.raises(KilltestError, match=r"store.kind 'mongo' is not one of json_files, jsonl, postgres"):
        kind_of("mongo")


def _minimal_store(kind_name):
    """A [store] table the kind accepts: every key it needs, and nothing else."""
    needed = {"path": '"{work_dir}/s"', "records": '"SELECT sku, price FROM t"'}
    kind = kind_of(kind_name)
    return f'kind = "{kind_name}"\n' + "".join(f"{key} = {needed[key]}\n" for key, rule in kind.spec_rules.items()
                                               if rule.needed)


@pytest.mark.parametrize("kind_name, key", [(name, key) for name in sorted(store_kinds())
                                            for key in kind_of(name).spec_rules])
def test_each_kind_refuses_a_spec_without_a_key_it_needs_or_with_one_it_cannot_use(tmp_path, kind_name, key):
    rule = kind_of(kind_name).spec_rules[key]
    store = _minimal_store(kind_name)
    spec(tmp_path, store)  # accepted as it is
    if rule.needed:
        store, line = "".join(text + "\n" for text in store.splitlines() if not text.startswith(key + " ")), 5
    else:
        store, line = store + f'{key} = "SELECT 1"\n', 6 + store.count("\n")
    with pytest.raises(KilltestError) as error:
        spec(tmp_path, store)
    assert str(error.value) == f"{tmp_path / 'design.toml'}:{line}: {rule.message}"


@pytest.mark.parametrize("kind_name", sorted(store_kinds()))
def test_a_kind_kept_in_a_server_is_read_from_the_runs_dsn_and_any_other_from_its_path(tmp_path, kind_name):
    design, _ = spec(tmp_path, _minimal_store(kind_name))
    launch = Launch("http://site", "/w", 1.0, dsn="scheme://server/run_1")
    expected = "scheme://server/run_1" if kind_of(kind_name).server else "/w/s"
    assert design.store_location(launch) == expected
