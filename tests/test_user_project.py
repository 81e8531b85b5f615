"""killtest in a user's own project: its own `harness` and `scrapers` packages, its module design found
from its directory, its command design run with its own environment.

The installed tree is killtest.harness, killtest.scrapers and killtest.fixture_site, so neither side
shadows the other; a module design is found in the spec's folder and the folder killtest runs in; a
command design gets nothing of killtest's on its PYTHONPATH.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from killtest.harness.design.model import PROJECT_ROOT, Design, StoreSpec
from killtest.harness.design.specfile import load_spec

SPEC = """\
[design]
name = "mine"
module = "scrapers.mine"
args = ["--base", "{base_url}", "--db", "{store}", "--lease", "{lease_s}", "--crawl", "{crawl}"]
commit_path = ["claim", "complete", "save_record", "mark_done"]

[store]
kind = "sqlite"
path = "{work_dir}/mine.sqlite"
records = '''SELECT json_extract(data, '$.sku') AS sku, json_extract(data, '$.price') AS price,
             json_extract(data, '$.name') AS name FROM records'''
key = "sku"
fields = ["price", "name"]
"""


def _project(root) -> None:
    """A user's project whose own `harness` package refuses to be imported, and whose `scrapers.mine`
    is a copy of the article's idempotent scraper under the user's name."""
    (root / "harness").mkdir()
    (root / "harness" / "__init__.py").write_text('raise ImportError("the user\'s own harness was imported")\n')
    (root / "fixture_site").mkdir()
    (root / "fixture_site" / "__init__.py").write_text('raise ImportError("the user\'s fixture_site was imported")\n')
    (root / "scrapers").mkdir()
    (root / "scrapers" / "__init__.py").write_text("")
    (root / "scrapers" / "mine.py").write_text(open(os.path.join(PROJECT_ROOT, "scrapers", "idempotent.py")).read())
    (root / "design.toml").write_text(SPEC)


@pytest.mark.slow
def test_a_module_design_in_the_users_own_scrapers_package_runs_from_the_users_directory(tmp_path):
    _project(tmp_path)
    done = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", "design.toml", "--runs", "1",
                           "--schedule", "r3", "--listing-pages", "2", "--per-page", "3", "--no-plot",
                           "--out", "results"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert (tmp_path / "results" / "killtest.json").exists()


@pytest.mark.slow
def test_explore_finds_the_users_commit_path_lines(tmp_path):
    _project(tmp_path)
    done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design", "design.toml",
                           "--only", "l:complete+3:1", "--listing-pages", "2", "--per-page", "3", "--out", "results"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "1 crash point, 0 broken, 0 distinct failures" in done.stderr
    # The user's file is named by its absolute path: the replay line works from any directory.
    assert str(tmp_path / "scrapers" / "mine.py") in (tmp_path / "results" / "explore-mine.md").read_text()


def test_a_command_design_gets_nothing_of_killtests_on_its_path(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    command = Design(name="cmd", store=StoreSpec(kind="jsonl"), command_template=("python3", "scraper.py"))
    assert "PYTHONPATH" not in command.environment()
    monkeypatch.setenv("PYTHONPATH", "/the/users/own")
    assert command.environment()["PYTHONPATH"] == "/the/users/own"


def test_a_module_design_is_looked_for_in_the_spec_folder_and_the_working_folder_only(tmp_path, monkeypatch):
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    design = load_spec(str(tmp_path / "design.toml"))
    path = design.environment()["PYTHONPATH"].split(os.pathsep)
    assert path == [str(tmp_path)]
    assert PROJECT_ROOT not in path  # killtest's own folder would put its packages before the user's
    assert design.source_file == str(tmp_path / "scrapers" / "mine.py")
