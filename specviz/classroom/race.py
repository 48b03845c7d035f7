"""A drafter race on one prompt: the draft model, prompt lookup, hybrid and a draft tree, each through the real decoder.

Every lane decodes the same prompt greedily (T = 0) with the same K, and each one the way Generate decodes it
under the page's default settings (`specviz.engine.drafter_names`): the same decoder entry, the same cache kind
and compiled or eager forwards, the same warm-up (outside the timed rounds). The target alone is Generate's own
comparison, so a lane's speedup is the one Generate would show; the tree runs eagerly on the dynamic cache, as it
does in Generate, and is measured against that same target alone (on a CPU every lane is eager). The target
alone runs first and is the reference: greedy speculative decoding must give exactly its tokens, so the race is
also a losslessness check, and a lane that differs says at which token.

Each emitted token keeps who proposed it: a drafted token accepted by the target carries its `DraftToken.source`
("model" or "ngram"), and the token the target chose itself (the correction after a rejection, or the bonus after
a round where every draft passed) is the target's. τ (tokens per round), the acceptance rate (accepted / drafted)
and tokens per second of decoding (the prompt's reading not counted, the same for every lane) are measured here;
the page only formats them (specviz.viz.race). No Gradio; torch and the decoder are imported only where a lane
runs, so the lanes' types and figures are read (by the view, by the page's input checks) without a model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Generator, Iterable

from ..engine.drafter_names import PAGE_COMPILE, compile_for, drafting
from ..limits import APP_MAX_K, APP_MAX_RACE_TOKENS, APP_MAX_TREE_NODES
from ..runtime.report import Reporting, RunReport
from ..trace.records import Round, first_difference

TARGET = "target"                                  # the reference lane, and the source of the target's own tokens
ENTRANTS = ("model", "ngram", "hybrid", "tree")    # the racing drafters, in the order they run and are shown
LANES = (TARGET, *ENTRANTS)
SOURCES = ("model", "ngram", TARGET)               # who can have proposed an emitted token
MAX_RACE_K = min(APP_MAX_K, APP_MAX_TREE_NODES)    # one K for every lane: the chains' K and the tree's nodes


class RaceStopped(Exception):
    """The caller's `stop()` ended a lane (the decoders ask it between rounds, or steps): a cut lane has no figures."""


@dataclass(frozen=True)
class Piece:
    """One emitted token and who proposed it ("model", "ngram" or "target")."""

    token_id: int
    source: str


@dataclass
class Lane:
    """One drafter's run: its tokens with their sources, and what it measured."""

    entrant: str
    pieces: list[Piece] = field(default_factory=list)
    rounds: int = 0          # target forwards while decoding (the target alone: one per token)
    drafted: int = 0         # draft tokens put to the target
    accepted: int = 0        # ... of which it kept
    seconds: float = 0.0     # decoding time: the sum of the rounds' (steps') own seconds, prompt reading excluded
    longest: int = 0         # the most drafts prompt lookup got accepted in one round

    @property
    def output_ids(self) -> list[int]:
        return [p.token_id for p in self.pieces]

    @property
    def tokens(self) -> int:
        return len(self.pieces)

    @property
    def tau(self) -> float:
        """Tokens per target forward (τ); 1 for the target alone."""
        return self.tokens / self.rounds if self.rounds else float("nan")

    @property
    def acceptance(self) -> float:
        """Accepted / drafted; NaN where nothing was drafted (the target alone, or lookup that never matched)."""
        return self.accepted / self.drafted if self.drafted else float("nan")

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")

    def count(self, source: str) -> int:
        return sum(1 for p in self.pieces if p.source == source)

    def share(self, source: str) -> float:
        """The share of the emitted tokens that `source` proposed."""
        return self.count(source) / self.tokens if self.tokens else float("nan")


def pieces_of(rnd: Round) -> list[Piece]:
    """A round's emitted tokens with their proposers: the accepted drafts carry their source, then the target's own
    token (EOS may have cut the round short; `emitted` is what was kept)."""
    accepted = rnd.n_accepted
    return [Piece(int(tok), rnd.drafted[i].source if i < accepted else TARGET) for i, tok in enumerate(rnd.emitted)]


def decoder_rounds(target, draft, prompt_ids: list[int], entrant: str, k: int, max_new_tokens: int,
                   **run) -> Generator[Round, None, RunReport]:
    """The race's one call to `speculative_generate`: greedy, no per-token records (they would slow the clock),
    the drafter's options as Generate's (`drafter_names.drafting` and `compile_for` at the page's compile choice). The tree
    is the draft model's dynamic tree of K nodes, as the page's "tree".
    `run`: the decoder's `eos_token_id` and `stop` (asked between rounds), passed on as they are; the generator
    returns the run's report (its `stopped` says Stop ended the lane)."""
    from ..engine.options import DecodeOptions
    from ..engine.sampling import SamplingConfig
    from ..generate import speculative_generate

    if entrant not in ENTRANTS:
        raise ValueError(f"unknown race entrant {entrant!r}; one of {ENTRANTS}")
    options = DecodeOptions(sampling=SamplingConfig(temperature=0.0), max_new_tokens=max_new_tokens, seed=0,
                            drafting=drafting(entrant, k), record=False, compile=compile_for(entrant, PAGE_COMPILE),
                            **run)
    return speculative_generate(target, None if entrant == "ngram" else draft, prompt_ids, options)


def lane_from_rounds(entrant: str, rounds: Iterable[Round]) -> Lane:
    """A lane's figures from its rounds."""
    lane = Lane(entrant)
    for rnd in rounds:
        lane.pieces.extend(pieces_of(rnd))
        lane.rounds += 1
        lane.drafted += rnd.k
        lane.accepted += rnd.n_accepted
        lane.longest = max(lane.longest, sum(1 for p in pieces_of(rnd) if p.source == "ngram"))
        lane.seconds += rnd.seconds
    return lane


def target_lane(target, prompt_ids: list[int], max_new_tokens: int, *, eos_token_id=None,
                stop: Callable[[], bool] | None = None) -> Lane:
    """The target alone, greedy, as Generate's comparison runs it after a run with the page's default drafter and
    compile choice (`drafter_names.compile_for`): the reference every lane must equal, and the speed
    every lane is measured against."""
    from ..engine.baseline import autoregressive_generate
    from ..engine.options import DecodeOptions
    from ..engine.sampling import SamplingConfig

    lane = Lane(TARGET)
    options = DecodeOptions(sampling=SamplingConfig(temperature=0.0), max_new_tokens=max_new_tokens, seed=0,
                            eos_token_id=eos_token_id, compile=compile_for("model", PAGE_COMPILE), stop=stop)
    steps = Reporting(autoregressive_generate(target, prompt_ids, options))
    for s in steps:
        lane.pieces.append(Piece(int(s.token_id), TARGET))
        lane.rounds += 1
        lane.seconds += s.seconds
    if steps.report.stopped:   # the loop asked `stop()` between steps (or in the prompt) and ended there
        raise RaceStopped()
    return lane


def run_lane(pair, prompt_ids: list[int], lane: str, k: int, max_new_tokens: int,
             stop: Callable[[], bool] | None = None) -> Lane:
    """One lane of the race on a loaded pair (`.target`, `.draft`, `.eos_token_ids`); RaceStopped after Stop."""
    check(k, max_new_tokens)
    eos = list(getattr(pair, "eos_token_ids", None) or []) or None
    if lane == TARGET:
        return target_lane(pair.target, prompt_ids, max_new_tokens, eos_token_id=eos, stop=stop)
    rounds = Reporting(decoder_rounds(pair.target, pair.draft, prompt_ids, lane, k, max_new_tokens, eos_token_id=eos,
                                      stop=stop))
    figures = lane_from_rounds(lane, rounds)
    if rounds.report.stopped:   # the decoder asked `stop()` between rounds (or in the prompt) and ended there
        raise RaceStopped()
    return figures


def check(k: int, max_new_tokens: int) -> None:
    """K and the token budget as whole numbers in range (the page checks its boxes first: this is the last guard)."""
    for name, value, hi in (("k", k, MAX_RACE_K), ("max_new_tokens", max_new_tokens, APP_MAX_RACE_TOKENS)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
            raise ValueError(f"{name} must be a whole number from 1 to {hi}, not {value!r}")


@dataclass(frozen=True)
class Verdict:
    """How a lane compares with the target alone."""

    same: bool
    first_diff: int | None   # 0-based index of the first token that differs (a length difference counts)


def verdict(reference: Lane, lane: Lane) -> Verdict:
    diff = first_difference(reference.output_ids, lane.output_ids)
    return Verdict(diff is None, diff)


def run_race(pair, prompt_ids: list[int], k: int, max_new_tokens: int, stop: Callable[[], bool] | None = None,
             lanes: Iterable[str] = LANES) -> list[Lane]:
    """Every lane in turn (the target alone first), for scripts and tests; the page runs them one by one itself."""
    return [run_lane(pair, prompt_ids, name, k, max_new_tokens, stop) for name in lanes]
