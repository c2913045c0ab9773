"""The live index answers before its dense encoder has loaded, and warms it in the background."""

from __future__ import annotations

from pathlib import Path

from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import Report
from clinsearch.models import encoder
from clinsearch.server.live import LiveIndex

REPORTS = [
    Report(id="r1", text="FINDINGS: Small right pleural effusion.", patient_id="p1"),
    Report(id="r2", text="IMPRESSION: No pneumothorax. Heart size normal.", patient_id="p2"),
    Report(id="r3", text="FINDINGS: Enlarged cardiac silhouette.", patient_id="p3"),
]


def test_search_answers_while_the_encoder_loads_and_dense_is_warm_after(tmp_path: Path) -> None:
    components = ("bm25", "findings", "concepts", "dense")
    path = tmp_path / "idx"
    Index.build(REPORTS, path, IndexConfig(components=components), progress=False).close()
    live = LiveIndex(path)
    try:
        with encoder._LOADING:  # no encoder loads (or is found loaded) while this is held
            live.start()
            for method in ("bm25", "concept"):
                hits = live.run(lambda s, m=method: s.index.search("pleural effusion", method=m))
                assert hits[0].report_id == "r1"
            assert not live.warm.is_set()  # the background load waits for the lock
        assert live.warm.wait(120)
        hits = live.run(lambda s: s.index.search("fluid around the lung", method="hybrid"))
        assert "dense" in hits[0].explanation["ranks"]
    finally:
        live.stop()
