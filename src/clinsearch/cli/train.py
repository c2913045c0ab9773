"""Training commands: the ``train`` group (weak labels, bi-encoder, cross-encoder, term encoder)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from clinsearch.cli import app, console
from clinsearch.cli.options import DeviceOpt
from clinsearch.errors import InputError

train_app = typer.Typer(
    help="Train retrieval models from lexicon weak labels (no manual labels).", no_args_is_help=True
)
app.add_typer(train_app, name="train")

TrainIndex = Annotated[
    Path, typer.Option("--index", help="Index directory whose sentences and findings label.")
]


def _model_out(out: Path) -> Path:
    """``--out`` checked before any work: a new or empty folder, or a model to replace."""
    from clinsearch.train.loop import check_model_out

    return check_model_out(out)


ModelOut = Annotated[
    Path, typer.Option("--out", "-o", callback=_model_out, help="Model folder to write (a new"
                       " or empty folder, or a model trained before: replaced at the end)")
]
BaseModel = Annotated[
    Path | None,
    typer.Option("--base-model", help="Local model folder to start from [default: MiniLM-L6-v2]."),
]
LabelsIn = Annotated[
    Path | None,
    typer.Option("--labels", help="Labels from 'train labels' instead of the index's findings."),
]
Types = Annotated[
    str, typer.Option("--types", help="Comma-separated concept types that make labels.")
]
Epochs = Annotated[int, typer.Option("--epochs", min=1, help="Passes over the training data.")]
Lr = Annotated[float, typer.Option("--lr", help="AdamW learning rate.")]
WeightDecay = Annotated[float, typer.Option("--weight-decay", help="AdamW weight decay.")]
Warmup = Annotated[
    int, typer.Option("--warmup", help="Linear warm-up steps (capped at a tenth of the run).")
]
MaxSteps = Annotated[
    int | None, typer.Option("--max-steps", min=1, help="Stop after this many steps.")
]
CheckpointEvery = Annotated[
    int, typer.Option("--checkpoint-every", help="Checkpoint to OUT.ckpt every N steps (0: never)")
]
Resume = Annotated[
    bool, typer.Option("--resume", help="Continue from the checkpoint in OUT.ckpt if there is one.")
]
Threads = Annotated[
    int | None, typer.Option("--threads", min=1, help="Torch CPU threads [default: torch's].")
]
Seed = Annotated[int, typer.Option("--seed", help="Seed for data order and sampling.")]
MaxSeqLength = Annotated[int, typer.Option("--max-seq-length", min=8)]
MaxPairsPerQuery = Annotated[int | None, typer.Option("--max-pairs-per-query", min=1)]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")]


def _loop(
    epochs: int, lr: float, weight_decay: float, warmup: int, max_steps: int | None,
    checkpoint_every: int, resume: bool, threads: int | None, seed: int, quiet: bool, desc: str,
) -> Any:
    """The shared training-loop settings from command options (and the torch thread count)."""
    from clinsearch.train.loop import LoopConfig

    if threads:
        import torch

        torch.set_num_threads(threads)
    return LoopConfig(
        epochs=epochs, lr=lr, weight_decay=weight_decay, warmup_steps=warmup, max_steps=max_steps,
        seed=seed, checkpoint_every=checkpoint_every, resume=resume, progress=not quiet, desc=desc,
    )


def _types(value: str) -> tuple[str, ...]:
    """Concept types from a comma-separated option."""
    return tuple(t.strip() for t in value.split(",") if t.strip())


def _trained(result: Any, what: str) -> None:
    """One line saying what was trained, where, how long, and the loss at start and end."""
    losses = result.losses
    k = max(1, min(10, len(losses) // 5))
    first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
    console.print(
        f"trained {what}: {result.steps} steps in {result.seconds:.0f} s, loss {first:.4f} -> "
        f"{last:.4f}, peak memory {result.peak_rss_mb:.0f} MiB; saved to {escape(str(result.out))}"
    )


@train_app.command("labels")
def train_labels_command(
    index_dir: TrainIndex,
    out: Annotated[Path, typer.Option("--out", "-o", help="JSON lines file to write.")],
    types: Types = "finding,disease",
    modifiers: Annotated[
        bool, typer.Option("--modifiers/--no-modifiers", help="Also queries with one modifier.")
    ] = True,
    min_matches: Annotated[
        int, typer.Option("--min-matches", min=1, help="Drop queries matching fewer sentences.")
    ] = 1,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --out if it exists.")] = False,
    quiet: Quiet = False,
) -> None:
    """Weak labels: "M" / "no M" queries (with phrasings) and the sentences each one matches
    (--out is never overwritten unless --force, and is private to its owner)."""
    from clinsearch.exports import check_export_path
    from clinsearch.train.labelfile import write_labels
    from clinsearch.train.training_data import labels_from_index

    check_export_path(out, force)  # before the work, so a bad path fails at once
    labels = labels_from_index(
        index_dir, types=_types(types), with_modifiers=modifiers, min_matches=min_matches,
        progress=not quiet,
    )
    write_labels(out, labels, force=force)
    console.print(
        f"{labels.count('positive')} positive and {labels.count('negative')} negative queries, "
        f"{labels.entries} (query, sentence) entries over {len(labels.texts)} unique sentences; "
        f"wrote {escape(str(out))}"
    )


@train_app.command("biencoder")
def train_biencoder_command(
    index_dir: TrainIndex,
    out: ModelOut,
    labels: LabelsIn = None,
    source: Annotated[
        str, typer.Option("--source", help="findings: 'M'/'no M' queries over sentences; "
                          "sections: (entity, section) queries over section passages.")
    ] = "findings",
    base_model: BaseModel = None,
    loss: Annotated[
        str, typer.Option("--loss", help="triplet ([Shi2022]) or listwise ([CAPR2021])")
    ] = "triplet",
    negatives: Annotated[
        str, typer.Option("--negatives", help="hard: hardest in-batch negative; random: any.")
    ] = "hard",
    margin: Annotated[float, typer.Option("--margin", help="Triplet margin (cosine).")] = 0.5,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=2, help="Pairs per (mega-)batch: in-batch negatives "
                          "(128 with --chunk-size 64: [Shi2022]'s mega-batch).")
    ] = 32,
    chunk_size: Annotated[
        int, typer.Option("--chunk-size", min=1, help="Texts encoded with gradients at once.")
    ] = 64,
    max_seq_length: MaxSeqLength = 128,
    max_pairs_per_query: MaxPairsPerQuery = None,
    pair_opposites: Annotated[
        bool, typer.Option(
            "--pair-opposites/--no-pair-opposites",
            help="Each pair brings a sentence of its opposite-polarity query ('no M' for 'M') "
            "into its batch as a hard negative.")
    ] = True,
    phrasings: Annotated[
        bool, typer.Option("--phrasings/--no-phrasings", help="Train on phrasing variants too.")
    ] = True,
    types: Types = "finding,disease",
    epochs: Epochs = 1,
    lr: Lr = 2e-5,
    weight_decay: WeightDecay = 0.01,
    warmup: Warmup = 100,
    max_steps: MaxSteps = None,
    checkpoint_every: CheckpointEvery = 200,
    resume: Resume = False,
    threads: Threads = None,
    device: DeviceOpt = None,
    seed: Seed = 13,
    quiet: Quiet = False,
) -> None:
    """Fine-tune a sentence-transformers bi-encoder on weak labels (usable by search --model)."""
    from clinsearch.train.biencoder import BiEncoderConfig, train_biencoder
    from clinsearch.train.training_data import training_data

    _choice("--source", source, ("findings", "sections"))
    _choice("--loss", loss, ("triplet", "listwise"))
    _choice("--negatives", negatives, ("hard", "random"))
    queries, texts = training_data(
        index_dir, labels_file=labels, source=source, phrasings=phrasings,  # type: ignore[arg-type]
        types=_types(types), progress=not quiet,
    )
    config = BiEncoderConfig(
        base_model=str(base_model) if base_model else None, loss=loss,  # type: ignore[arg-type]
        negatives=negatives, margin=margin, batch_size=batch_size,  # type: ignore[arg-type]
        chunk_size=chunk_size, max_seq_length=max_seq_length,
        max_pairs_per_query=max_pairs_per_query, pair_opposites=pair_opposites,
        loop=_loop(epochs, lr, weight_decay, warmup, max_steps, checkpoint_every, resume, threads,
                   seed, quiet, "bi-encoder"),
    )
    _trained(train_biencoder(queries, texts, out, config), "bi-encoder")


@train_app.command("crossencoder")
def train_crossencoder_command(
    index_dir: TrainIndex,
    out: ModelOut,
    labels: LabelsIn = None,
    base_model: BaseModel = None,
    loss: Annotated[
        str, typer.Option("--loss", help="bce: binary relevance per pair ([Soni2020]); listwise: "
                          "softmax over each positive and its negatives ([CAPR2021]).")
    ] = "listwise",
    negatives: Annotated[int, typer.Option("--negatives", min=1, help="Negatives per positive.")]
    = 10,
    hard_negatives: Annotated[
        bool, typer.Option("--hard-negatives/--random-negatives", help="BM25 hard negatives first.")
    ] = True,
    bm25_depth: Annotated[int, typer.Option("--bm25-depth", min=1)] = 50,
    max_positives: Annotated[
        int, typer.Option("--max-positives", min=1, help="Positives sampled per query.")
    ] = 4,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, help="Pairs per step (listwise: whole groups, "
                          "at least one).")
    ] = 33,
    max_length: Annotated[int, typer.Option("--max-length", min=16)] = 128,
    types: Types = "finding,disease",
    epochs: Epochs = 1,
    lr: Lr = 5e-5,
    weight_decay: WeightDecay = 0.01,
    warmup: Warmup = 100,
    max_steps: MaxSteps = None,
    checkpoint_every: CheckpointEvery = 200,
    resume: Resume = False,
    threads: Threads = None,
    device: DeviceOpt = None,
    seed: Seed = 13,
    quiet: Quiet = False,
) -> None:
    """Fine-tune a cross-encoder on weak labels, 1:N with BM25 hard negatives (search --rerank)."""
    from clinsearch import Index
    from clinsearch.train.crossencoder import CrossEncoderConfig, cross_groups, train_crossencoder
    from clinsearch.train.training_data import bm25_retriever, sentence_texts, training_data

    _choice("--loss", loss, ("bce", "listwise"))
    queries, _ = training_data(index_dir, labels_file=labels, phrasings=True,
                               types=_types(types), progress=not quiet)
    index = Index.open(index_dir)
    config = CrossEncoderConfig(
        base_model=str(base_model) if base_model else None, loss=loss,  # type: ignore[arg-type]
        negatives=negatives, hard_negatives=hard_negatives, bm25_depth=bm25_depth,
        max_positives_per_query=max_positives, batch_size=batch_size, max_length=max_length,
        loop=_loop(epochs, lr, weight_decay, warmup, max_steps, checkpoint_every, resume, threads,
                   seed, quiet, "cross-encoder"),
    )
    groups = cross_groups(queries, sentence_texts(index), bm25_retriever(index), config)
    _trained(train_crossencoder(groups, out, config), "cross-encoder")


@train_app.command("poly")
def train_poly_command(
    index_dir: TrainIndex,
    out: ModelOut,
    labels: LabelsIn = None,
    base_model: BaseModel = None,
    codes: Annotated[int, typer.Option("--codes", min=1, help="Learned codes (m).")] = 16,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=2, help="Pairs per batch: in-batch negatives.")
    ] = 32,
    max_seq_length: MaxSeqLength = 128,
    max_pairs_per_query: MaxPairsPerQuery = None,
    types: Types = "finding,disease",
    epochs: Epochs = 1,
    lr: Lr = 5e-5,
    weight_decay: WeightDecay = 0.01,
    warmup: Warmup = 100,
    max_steps: MaxSteps = None,
    checkpoint_every: CheckpointEvery = 200,
    resume: Resume = False,
    threads: Threads = None,
    device: DeviceOpt = None,
    seed: Seed = 13,
    quiet: Quiet = False,
) -> None:
    """Train a poly-encoder [CAPR2021] on weak labels (search --rerank poly:OUT)."""
    from clinsearch.train.poly import PolyConfig, train_poly_encoder
    from clinsearch.train.training_data import training_data

    queries, texts = training_data(index_dir, labels_file=labels, phrasings=True,
                                   types=_types(types), progress=not quiet)
    config = PolyConfig(
        base_model=str(base_model) if base_model else None, codes=codes, batch_size=batch_size,
        max_seq_length=max_seq_length, max_pairs_per_query=max_pairs_per_query,
        loop=_loop(epochs, lr, weight_decay, warmup, max_steps, checkpoint_every, resume, threads,
                   seed, quiet, "poly-encoder"),
    )
    _trained(train_poly_encoder(queries, texts, out, config), "poly-encoder")


@train_app.command("static")
def train_static_command(
    out: ModelOut,
    index_dir: Annotated[
        Path | None, typer.Option("--index", help="Index whose weak labels train the model;"
                                  " without it the distilled model is saved untrained.")
    ] = None,
    base_model: Annotated[
        Path | None,
        typer.Option("--base-model", help="Transformer folder to distil [default: MiniLM-L6-v2],"
                     " or a static model folder to train further."),
    ] = None,
    dims: Annotated[int, typer.Option("--dims", min=2, help="Dimensions kept (PCA).")] = 256,
    source: Annotated[
        str, typer.Option("--source", help="findings: 'M'/'no M' queries over sentences "
                          "([Shi2022]); sections: (entity, section) queries ([CAPR2021]).")
    ] = "findings",
    loss: Annotated[str, typer.Option("--loss", help="triplet or listwise")] = "triplet",
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=2, help="Pairs per mega-batch (in-batch negatives).")
    ] = 128,
    types: Types = "finding,disease",
    epochs: Epochs = 10,
    lr: Lr = 0.05,
    max_steps: MaxSteps = None,
    threads: Threads = None,
    seed: Seed = 13,
    quiet: Quiet = False,
) -> None:
    """A static encoder (numpy at search time, ~250x MiniLM's speed): distilled from a local
    transformer and, with --index, trained on the index's weak labels (usable by --model)."""
    import tempfile

    from clinsearch.models.static_distill import DistillConfig, distill
    from clinsearch.train.biencoder import train_biencoder
    from clinsearch.train.static import distilled_base, static_config
    from clinsearch.train.training_data import training_data

    _choice("--source", source, ("findings", "sections"))
    _choice("--loss", loss, ("triplet", "listwise"))
    if index_dir is None:
        distill(base_model, out, DistillConfig(dims=dims))
        console.print(f"distilled a static model; saved to {escape(str(out))}")
        return
    queries, texts = training_data(index_dir, source=source,  # type: ignore[arg-type]
                                   types=_types(types), progress=not quiet)
    loop = _loop(epochs, lr, 0.0, 100, max_steps, 0, False, threads, seed, quiet, "static")
    with tempfile.TemporaryDirectory(prefix="static-base-") as work:
        config = static_config(distilled_base(base_model, Path(work)), loss=loss,
                               batch_size=batch_size, chunk_size=2 * batch_size, loop=loop)
        _trained(train_biencoder(queries, texts, out, config), "static encoder")


@train_app.command("terms")
def train_terms_command(
    out: ModelOut,
    lexicon: Annotated[
        Path | None, typer.Option("--lexicon", help="Lexicon YAML [default: the shipped one].")
    ] = None,
    base_model: BaseModel = None,
    temperature: Annotated[float, typer.Option("--temperature", help="SupCon temperature.")] = 0.05,
    batch_size: Annotated[int, typer.Option("--batch-size", min=2, help="Terms per batch.")] = 128,
    epochs: Epochs = 10,
    lr: Lr = 5e-5,
    weight_decay: WeightDecay = 0.01,
    warmup: Warmup = 100,
    max_steps: MaxSteps = None,
    checkpoint_every: CheckpointEvery = 200,
    resume: Resume = False,
    threads: Threads = None,
    device: DeviceOpt = None,
    seed: Seed = 13,
    quiet: Quiet = False,
) -> None:
    """Train the term encoder on the lexicon's synonym lists (concept search's unknown words)."""
    from clinsearch.annotate.lexicon import Lexicon
    from clinsearch.train.terms import TermConfig, synonym_groups, train_term_encoder

    groups = synonym_groups(Lexicon.load(lexicon))
    config = TermConfig(
        base_model=str(base_model) if base_model else None, temperature=temperature,
        batch_size=batch_size,
        loop=_loop(epochs, lr, weight_decay, warmup, max_steps, checkpoint_every, resume, threads,
                   seed, quiet, "term encoder"),
    )
    _trained(train_term_encoder(groups, out, config), "term encoder")


def _choice(option: str, value: str, allowed: tuple[str, ...]) -> None:
    """Refuse an option value outside ``allowed`` with a clear message."""
    if value not in allowed:
        raise InputError(f"{value!r} is not one of {', '.join(allowed)}", field=option)
