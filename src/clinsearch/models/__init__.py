"""Model loading shared by dense retrieval, re-ranking and training: local folders only, hub off."""

from __future__ import annotations

import os

# Nothing is ever downloaded: every model comes from a local folder.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
