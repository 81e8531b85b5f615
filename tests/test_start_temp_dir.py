"""Each run gives its starts a TMPDIR of its own and removes it with the run: what a killed start leaves in
its temp dir (a browser's profile: Puppeteer's `puppeteer_dev_chrome_profile-*`, Chromium's
`org.chromium.Chromium.*`) never piles up in the machine's /tmp. A spec that sets TMPDIR keeps its own."""

from __future__ import annotations

import os

from killtest.harness.design.specfile import load_spec
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.running.runner import RunSettings, run_kill_test


def run_it(tmp_path, site, spec_of, env: str = ""):
    """A `command` design that leaves a file in its temp dir at every start, notes where, then crawls."""
    spec = tmp_path / "design.toml"
    spec.write_text(spec_of("leaves-temp-files", 'mktemp "${{TMPDIR:-/tmp}}/left-by-a-start.XXXXXX" >>'
                            ' {work_dir}/temp-files && exec "$0" "$@"', env))
    work = tmp_path / "work"
    work.mkdir()
    history = run_kill_test(load_spec(str(spec)), parse_schedule("r3,r9"), site, str(work), RunSettings(lease_s=0.2))
    return history, (work / "temp-files").read_text().split()


def test_what_killed_starts_leave_in_their_temp_dir_goes_with_the_run(tmp_path, site, idempotent_behind_shell):
    history, left = run_it(tmp_path, site, idempotent_behind_shell)
    assert len(history.of_type("kill")) == 2 and len(left) == 3  # three starts, a file each
    scratch = {os.path.dirname(path) for path in left}
    assert len(scratch) == 1 and os.path.basename(scratch.pop()).startswith("killtest-tmp-")  # one, the run's
    assert not any(os.path.exists(path) for path in left)  # removed with the run


def test_a_spec_that_sets_tmpdir_keeps_its_own(tmp_path, site, idempotent_behind_shell):
    own = tmp_path / "own-tmp"
    own.mkdir()
    _, left = run_it(tmp_path, site, idempotent_behind_shell, f'env = {{ TMPDIR = "{own}" }}')
    assert {os.path.dirname(path) for path in left} == {str(own)} and all(os.path.exists(path) for path in left)
