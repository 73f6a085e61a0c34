"""A read-only or full lake gives one line naming the lake and the cause, never a traceback, and loses nothing.

The real thing where the test may mount a small tmpfs (root, as in CI here);
a simulated ENOSPC / EROFS from inside Lance's write path everywhere.
"""

import errno
import os
import shutil
import subprocess
import sys
import uuid

import pytest
from click.testing import CliRunner
from conftest import FAST_MODEL

from kbflow.cli import main
from kbflow.lake.storage import storage_error

WRITERS = [
    ["add", "{extra}", "--type", "docs", "--id", "extra"],
    ["ingest", "--model", FAST_MODEL],
    ["tag", "snap"],
    ["remove", "docs"],
    ["gc", "--keep", "1"],
]


def _cli(lake, *args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "kbflow.cli", "--lake", lake, *args], capture_output=True, text=True, env=env
    )


def _one_clear_line(proc, lake, cause):
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and lake in lines[0] and cause in lines[0], lines
    return lines[0]


def _mount(path, options):
    os.makedirs(path, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True)
    return done.returncode == 0


def _umount(path):
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / f"mnt-{uuid.uuid4().hex[:6]}"
    if os.geteuid() != 0 or shutil.which("mount") is None or not _mount(mnt, "size=64m"):
        pytest.skip("cannot mount a tmpfs here (needs root); the simulated tests cover the messages")
    yield mnt
    _umount(mnt)


def _corpus(root, files, size):
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        words = " ".join(f"word{(i * 7 + j) % 997}" for j in range(size // 8))
        (root / f"doc{i:03d}.md").write_text(f"# Doc {i}\n\n{words}\n")
    return root


def test_every_writing_command_on_a_read_only_lake_says_so_in_one_line(small_fs, docs_dir, tmp_path):
    lake = str(small_fs / "lake")
    assert _cli(lake, "add", str(docs_dir), "--type", "docs").returncode == 0
    assert _cli(lake, "ingest", "--model", FAST_MODEL).returncode == 0
    extra = _corpus(tmp_path / "extra", 2, 200)
    assert subprocess.run(["mount", "-o", "remount,ro", str(small_fs)]).returncode == 0
    for args in WRITERS:
        args = [a.format(extra=extra) for a in args]
        line = _one_clear_line(_cli(lake, *args), lake, "read-only")
        assert "EROFS" in line, (args, line)
    # readers still work on a read-only lake
    out = _cli(lake, "search", "fusion", "-k", "2", "--json")
    assert out.returncode == 0 and out.stdout.count("\n") == 2, out.stderr


def test_a_full_disk_fails_in_one_line_and_the_lake_recovers_once_there_is_room(tmp_path):
    mnt = tmp_path / "tiny"
    if os.geteuid() != 0 or not _mount(mnt, "size=3m"):
        pytest.skip("cannot mount a tmpfs here (needs root); the simulated tests cover the messages")
    try:
        lake = str(mnt / "lake")
        corpus = _corpus(tmp_path / "big", 60, 60_000)  # ~3.6 MB of text: more than the disk holds
        assert _cli(lake, "add", str(corpus), "--type", "docs").returncode == 0
        line = _one_clear_line(_cli(lake, "ingest", "--model", FAST_MODEL), lake, "no space left on the device")
        assert "ENOSPC" in line and "free some space" in line
        assert subprocess.run(["mount", "-o", "remount,size=256m", str(mnt)]).returncode == 0
        out = _cli(lake, "ingest", "--model", FAST_MODEL, "--json")
        assert out.returncode == 0, out.stdout + out.stderr  # nothing was corrupted: the next ingest converges
        assert _cli(lake, "search", "word5 word12", "-k", "3").returncode == 0
    finally:
        _umount(mnt)


@pytest.mark.parametrize(
    "code, words", [(errno.ENOSPC, "no space left"), (errno.EROFS, "the file system is read-only")]
)
def test_simulated_storage_failures_inside_a_write_are_one_line(ingested, docs_dir, monkeypatch, code, words):
    """Wherever the test cannot mount a file system: the same error raised from inside the lake's writes."""
    from kbflow.lake.lake import Lake

    def broken(self, name, reader, rows_per_fragment=0):
        raise OSError(code, os.strerror(code), os.path.join(self.uri, name + ".lance"))

    monkeypatch.setattr(Lake, "append", broken)
    (docs_dir / "new.md").write_text("# New\n\nA new document to write.\n")
    out = CliRunner().invoke(main, ["--lake", ingested.uri, "ingest", "--runner", "local", "--model", FAST_MODEL])
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert out.output.startswith(f"Error: {ingested.uri}: cannot write the lake: {words}"), out.output
    assert len(out.output.strip().splitlines()) == 1


def test_lance_and_sqlite_messages_are_recognised():
    class LanceIO(OSError):
        pass

    assert "ENOSPC" in str(
        storage_error(LanceIO("LanceError(IO): Generic error: No space left on device (os error 28)"), "/lake")
    )
    import sqlite3

    assert "EROFS" in str(storage_error(sqlite3.OperationalError("attempt to write a readonly database"), "/lake"))
    assert storage_error(ValueError("a bug"), "/lake") is None
