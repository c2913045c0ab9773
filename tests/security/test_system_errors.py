"""Item 9: every failure the user's files or system cause is one line and exit 2: FIFOs (never
opened for reading), symlink loops, dangling links, disk full, read-only file systems, a model
folder of the wrong kind."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clinsearch.errors import InputError
from clinsearch.user_files import describe_failure, open_user_file

from .hostile import one_line_error, run


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "reports.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO"):
        open_user_file(fifo)
    # End to end in a subprocess, so a regression hangs only it (and fails on the timeout).
    done = subprocess.run(
        [sys.executable, "-m", "clinsearch", "index", str(fifo), "-f", "csv",
         "--out", str(tmp_path / "idx")],
        capture_output=True, text=True, timeout=120,
    )
    assert "FIFO" in one_line_error(done.returncode, done.stderr)


def test_symlink_loop_and_dangling_link(tmp_path: Path) -> None:
    loop = tmp_path / "loop.csv"
    loop.symlink_to(loop)
    dangling = tmp_path / "gone.csv"
    dangling.symlink_to(tmp_path / "missing.csv")
    assert "symlink loop" in one_line_error(
        *run("index", loop, "-f", "csv", "--out", tmp_path / "a")[::2])
    assert "dangling symlink" in one_line_error(
        *run("index", dangling, "-f", "csv", "--out", tmp_path / "b")[::2])


def test_txt_dir_fifo_loop_and_dangling_link_are_bad_records(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("Right lower lobe pneumonia.")
    os.mkfifo(folder / "b.txt")
    (folder / "c.txt").symlink_to(folder / "c.txt")
    (folder / "d.txt").symlink_to(folder / "missing.txt")
    line = one_line_error(*run("index", folder, "-f", "txt-dir", "--out", tmp_path / "x")[::2])
    assert "b.txt" in line and "FIFO" in line
    code, _, err = run("index", folder, "-f", "txt-dir", "--skip-bad", "--out", tmp_path / "y")
    assert code == 0, err
    assert "skipped 3 bad records (3 unreadable file)" in err
    assert "symlink loop" in err and "dangling symlink" in err


def _big_corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "big.csv"
    rows = [f"r{i},Right lower lobe pneumonia number {i}, effusion {i * 7}." for i in range(3000)]
    corpus.write_text("id,text\n" + "\n".join(rows) + "\n")
    return corpus


def test_disk_full_is_one_line_and_leaves_nothing(tmp_path: Path, tiny_disk: Path) -> None:
    line = one_line_error(*run("index", _big_corpus(tmp_path), "-f", "csv",
                               "--out", tiny_disk / "idx")[::2])
    assert "no space left on device" in line
    assert not (tiny_disk / "idx").exists()


def test_read_only_file_system(tmp_path: Path, tiny_disk: Path, built_once: Path) -> None:
    shutil.copytree(built_once, tiny_disk / "idx")
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_disk)], check=True)
    line = one_line_error(*run("delete", tiny_disk / "idx", "--ids", "r1")[::2])
    assert "read-only file system" in line
    code, out, err = run("search", tiny_disk / "idx", "pneumothorax", "--format", "json",
                         "--method", "bm25")
    assert "r1" in out if code == 0 else "read-only file system" in one_line_error(code, err)


def test_file_size_limit_in_a_subprocess(tmp_path: Path) -> None:
    """Where no tmpfs can be mounted: RLIMIT_FSIZE makes writes fail (EFBIG, a real OS limit)."""
    script = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))\n"
        "from clinsearch.cli import main\n"
        f"sys.argv = ['clinsearch', 'index', {str(_big_corpus(tmp_path))!r}, '-f', 'csv',"
        f" '--out', {str(tmp_path / 'idx')!r}]\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert "file too large" in one_line_error(done.returncode, done.stderr)
    assert not (tmp_path / "idx").exists()


def test_failure_descriptions() -> None:
    assert describe_failure(OSError(errno.ENOSPC, "No space", "/x/y")) == (
        "/x/y: no space left on device")
    assert describe_failure(ValueError("IoError: failed to write (os error 28)")) == (
        "no space left on device")
    assert describe_failure(OSError(errno.EROFS, "ro")) == "read-only file system"
    assert describe_failure(FileNotFoundError("/x/r.parquet")) == (  # pyarrow's: no errno
        "/x/r.parquet: no such file or directory")
    err = shutil.Error([("/a", "/b", "[Errno 28] No space left on device")])
    assert describe_failure(err) == "/a: [Errno 28] No space left on device"
    assert describe_failure(KeyError("bug")) is None


def test_model_folder_of_the_wrong_kind(built_once: Path, tmp_path: Path) -> None:
    wrong = tmp_path / "not-a-model"
    wrong.mkdir()
    (wrong / "config.json").write_text('{"model_type": "no-such-architecture"}')
    (wrong / "model.safetensors").write_bytes(b"\0" * 16)
    (wrong / "tokenizer.json").write_text("{}")
    line = one_line_error(*run("search", built_once, "pneumonia", "--rerank", wrong)[::2])
    assert "is not a cross-encoder" in line  # refused before loading (issue 15)
    line = one_line_error(*run("search", built_once, "pneumonia", "--rerank", built_once)[::2])
    assert "not a sentence-transformers or Hugging Face model folder" in line


def test_a_fifo_planted_in_an_index_does_not_hang_readers(index_dir: Path) -> None:
    gen = index_dir / (index_dir / "CURRENT").read_text().strip()
    (gen / ".lease").unlink()
    os.mkfifo(gen / ".lease")
    done = subprocess.run(
        [sys.executable, "-m", "clinsearch", "search", str(index_dir), "pneumonia"],
        capture_output=True, text=True, timeout=120,
    )
    assert "FIFO" in one_line_error(done.returncode, done.stderr)
