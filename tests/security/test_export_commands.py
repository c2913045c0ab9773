"""Item 4, for every file the CLI writes for the user (``train labels --out``, ``eval
--save-runs`` and ``--plot-dir``, ``lexicon import --out``, ``bench build ... --out``,
``review export --out``, ``review rejected --export``): the one export path, so none is
overwritten without --force, none lands in an index, a folder or a missing folder is one line,
and what is written is private."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from .hostile import one_line_error, run

Command = Callable[[Path, Path], list[str | Path]]  # (index, output option's value) -> args


def _labels(index: Path, out: Path) -> list[str | Path]:
    return ["train", "labels", "--index", index, "--out", out, "-q"]


def _lexicon(index: Path, out: Path) -> list[str | Path]:
    source = index.parent / "terms.csv"
    source.write_text("concept,term\npulmonary sequestration,bronchopulmonary sequestration\n")
    return ["lexicon", "import", source, "--format", "csv", "--out", out]


def _eval(option: str) -> Command:
    def args(index: Path, folder: Path) -> list[str | Path]:
        queries, qrels = index.parent / "q.tsv", index.parent / "q.qrels"
        queries.write_text("qid\tquery\tkind\nq1\tpneumonia\tpositive\nq2\tno pneumothorax\t"
                           "negative\n")
        qrels.write_text("q1 0 r3 1\nq2 0 r1 1\n")
        return ["eval", "--index", index, "--queries", queries, "--qrels", qrels,
                "--method", "bm25", "-m", "map", option, folder]
    return args


def _bench(index: Path, folder: Path) -> list[str | Path]:
    return ["bench", "build", "weak-sentences", "--index", index, "--min-relevant", "1",
            "--out", folder]


def _review(*command: str) -> Command:
    def args(index: Path, out: Path) -> list[str | Path]:
        store = index.parent / "workbench.sqlite"
        if not store.exists():  # one review to export, drawn once
            code, _, err = run("review", "start", index, "pneumonia", "--owner", "ann",
                               "--workbench", store)
            assert code == 0, err
        return ["review", *command, "1", index, "--workbench", store,
                "--out" if command == ("export",) else "--export", out]
    return args


FILES = {"train labels --out": (_labels, "labels.jsonl"),
         "lexicon import --out": (_lexicon, "lexicon.yaml"),
         "review export --out": (_review("export"), "review.csv"),
         "review rejected --export": (_review("rejected"), "rejected.csv")}
FOLDERS = {"eval --save-runs": (_eval("--save-runs"), "bm25.run"),
           "eval --plot-dir": (_eval("--plot-dir"), "metrics_by_group.png"),
           "bench build --out": (_bench, "fold1/qrels.txt")}


def _private(path: Path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("name", list(FILES))
def test_file_outputs_are_exports(name: str, index_dir: Path, tmp_path: Path) -> None:
    command, file_name = FILES[name]
    out = tmp_path / file_name
    out.write_text("precious\n")
    line = one_line_error(*run(*command(index_dir, out))[::2])
    assert "exists; use --force" in line and out.read_text() == "precious\n"
    code, _, err = run(*command(index_dir, out), "--force")
    assert code == 0, err
    assert out.read_text() != "precious\n" and _private(out)
    current = index_dir / "CURRENT"
    before = current.read_text()
    for target in (current, index_dir / file_name):
        line = one_line_error(*run(*command(index_dir, target), "--force")[::2])
        assert "inside an index directory" in line
    assert current.read_text() == before
    assert "is a directory" in one_line_error(*run(*command(index_dir, tmp_path))[::2])
    assert "does not exist" in one_line_error(
        *run(*command(index_dir, tmp_path / "no" / file_name))[::2])


@pytest.mark.parametrize("name", list(FOLDERS))
def test_folder_outputs_hold_exports(name: str, index_dir: Path, tmp_path: Path) -> None:
    command, file_name = FOLDERS[name]
    folder = tmp_path / "out"
    code, _, err = run(*command(index_dir, folder))  # a missing folder is made, private
    assert code == 0, err
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and _private(folder / file_name)
    written = (folder / file_name).read_bytes()
    (folder / file_name).write_text("precious\n")
    line = one_line_error(*run(*command(index_dir, folder))[::2])
    assert "exists; use --force" in line and (folder / file_name).read_text() == "precious\n"
    code, _, err = run(*command(index_dir, folder), "--force")
    assert code == 0, err
    assert (folder / file_name).read_bytes()[:8] == written[:8] and _private(folder / file_name)
    line = one_line_error(*run(*command(index_dir, index_dir / "runs"))[::2])
    assert "inside an index directory" in line and not (index_dir / "runs").exists()
    (tmp_path / "a-file").write_text("x")
    assert "not a folder" in one_line_error(*run(*command(index_dir, tmp_path / "a-file"))[::2])
    assert "does not exist" in one_line_error(
        *run(*command(index_dir, tmp_path / "no" / "out"))[::2])


@pytest.mark.parametrize("command", ["biencoder", "crossencoder", "terms"])
def test_training_never_replaces_a_folder_that_is_not_a_model(
    command: str, index_dir: Path, tmp_path: Path
) -> None:
    """A model folder is replaced as a whole at the end, so ``--out`` naming an index or any
    other non-empty folder (or a file) is refused before the training starts."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "keep.txt").write_text("precious\n")
    (tmp_path / "a-file").write_text("x")
    index_args = [] if command == "terms" else ["--index", index_dir]
    for out, why in ((index_dir, "not a model trained by clinsearch"),
                     (notes, "not a model trained by clinsearch"),
                     (tmp_path / "a-file", "not a model folder")):
        line = one_line_error(*run("train", command, *index_args, "--out", out, "-q")[::2])
        assert why in line
    assert (notes / "keep.txt").read_text() == "precious\n"
    assert (index_dir / "CURRENT").is_file()
