"""Token counts of composed evidence with a named tokenizer that needs no download.

The tokenizer is all-MiniLM-L6-v2's (BERT's uncased WordPiece vocabulary of 30,522 pieces),
read from the ``tokenizer.json`` the onnx embedder ships (``graphmem/_model/``). It is not the
answer model's tokenizer: for English chat text WordPiece counts come within about 10% of the
BPE counts of current chat models, and the same text always counts the same, so figures are
comparable across runs and recipes. :data:`TOKENIZER` names it in every report.
"""

from __future__ import annotations

import threading
from typing import Any

TOKENIZER = "all-MiniLM-L6-v2 WordPiece (bert-base-uncased vocabulary)"
"""The name reports give the counts of :func:`count_tokens`."""

_lock = threading.Lock()
_tokenizer: Any = None


def _load() -> Any:
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            from tokenizers import Tokenizer

            from graphmem.core.embed import DEFAULT_ONNX_DIR, home_onnx_dir

            path = DEFAULT_ONNX_DIR / "tokenizer.json"
            if not path.is_file():
                path = home_onnx_dir(None) / "tokenizer.json"
            tok = Tokenizer.from_file(str(path))
            tok.no_truncation()
            tok.no_padding()
            _tokenizer = tok
        return _tokenizer


def count_tokens(texts: list[str]) -> list[int]:
    """Tokens of each text under :data:`TOKENIZER`, without the [CLS]/[SEP] markers (0 for "").

    Raises:
        ModelFileError: no tokenizer file is installed (see :mod:`graphmem.core.embed`).
    """
    if not texts:
        return []
    tok = _load()
    return [len(e.ids) for e in tok.encode_batch(list(texts), add_special_tokens=False)]
