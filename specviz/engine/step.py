"""`Step`: one token of the target alone, in a module of its own so that the records that hold steps beside rounds
(specviz.trace.records) and the classroom that reads them never import torch for it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Step:
    """One token of plain (target-alone) decoding."""

    index: int
    token_id: int
    text: str
    p: float
    seconds: float
