"""Where the step view stands: one frozen value, and the moves that give the next one.

Pure (no Gradio, no torch), so the moves are tested without a page: the tab
keeps a `StepState` per session (in a gr.State) and only renders it. The round
under the cursor is either the recorded one or its re-draw number `draw` from
the page's seed (`decisions.redraw`); moving within a round keeps the draw, leaving
the round goes back to the recorded u. Every move takes the trace's rounds and
the seed, because a re-drawn round can have a different number of stops.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from ..limits import APP_MAX_DRAW
from ..trace.records import Round
from .decisions import Redrawn, redraw, stop_decision
from .steps import Stop, stops


@dataclass(frozen=True)
class StepView:
    """What the page shows for a state: the round as shown, the stop under the cursor, whether u is hidden."""

    redrawn: Redrawn         # .round is the round as shown; the flags say how far a re-draw could follow it
    pos: int                 # index of the stop in stops(round), clamped
    stop: Stop
    hidden: bool             # predict mode, at a test whose u is not shown yet
    last: bool               # the round's last stop

    @property
    def round(self) -> Round:
        return self.redrawn.round

    @property
    def decided(self) -> bool:
        """Every test of the round has been shown, u included: from here its summary gives nothing away (before
        it, at the draft or the verify, it told the outcome the walk was about to show)."""
        later = stops(self.round)[self.pos + 1:]
        return not self.hidden and not any(s.kind in ("test", "node") for s in later)

    @property
    def shows_rejection(self) -> bool:
        """The stop shows a rejected draft or its correction (where the mass picture explains it)."""
        if self.stop.kind == "correction":
            return True
        test = stop_decision(self.round, self.stop)
        return test is not None and not self.hidden and not test.accepted


@dataclass(frozen=True)
class StepState:
    round: int = 0           # 0-based index into the trace's rounds
    stop: int = 0            # 0-based index into the stops of the round as shown
    draw: int = 0            # 0: the recorded u; n ≥ 1: re-draw n from the seed
    revealed: bool = False   # predict mode: the u of the test under the cursor has been shown
    playing: bool = False

    @classmethod
    def opened(cls, start_round: int = 0) -> StepState:
        return cls(round=max(0, start_round))

    @classmethod
    def at_step(cls, rounds: Sequence[Round], step: int) -> StepState:
        """Decision number `step` (1-based) counted through the recorded rounds, as Next would reach it from the
        first; a step past the end is the last one. What a link's `?step=N` names."""
        left = max(1, int(step)) - 1
        for r, rnd in enumerate(rounds):
            n = len(stops(rnd))
            if left < n:
                return cls(round=r, stop=left)
            left -= n
        return cls(round=len(rounds) - 1, stop=len(stops(rounds[-1])) - 1) if rounds else cls()

    def step_number(self, rounds: Sequence[Round]) -> int:
        """The 1-based decision number of the recorded position (the inverse of `at_step`)."""
        r = max(0, min(self.round, len(rounds) - 1))
        return sum(len(stops(rnd)) for rnd in rounds[:r]) + self.stop + 1

    def view(self, rounds: Sequence[Round], seed: int, predict: bool = False) -> StepView:
        recorded = rounds[max(0, min(self.round, len(rounds) - 1))]
        shown = redraw(recorded, seed, self.draw)
        all_stops = stops(shown.round)
        pos = max(0, min(self.stop, len(all_stops) - 1))
        stop = all_stops[pos]
        hidden = bool(predict) and stop.kind in ("test", "node") and not self.revealed
        return StepView(shown, pos, stop, hidden, pos == len(all_stops) - 1)

    def next(self, rounds: Sequence[Round], seed: int, predict: bool = False) -> StepState:
        """One decision forward; in predict mode a hidden u is shown first. Stays put at the trace's end."""
        if not rounds:
            return self
        v = self.view(rounds, seed, predict)
        if v.hidden:
            return replace(self, stop=v.pos, revealed=True)
        if not v.last:
            return replace(self, stop=v.pos + 1, revealed=False)
        if self.round + 1 < len(rounds):
            return replace(self, round=self.round + 1, stop=0, draw=0, revealed=False)
        return replace(self, stop=v.pos)

    def prev(self, rounds: Sequence[Round], seed: int) -> StepState:
        """One decision back; from a round's first stop to the previous (recorded) round's last."""
        if not rounds:
            return self
        pos = self.view(rounds, seed).pos
        if pos > 0:
            return replace(self, stop=pos - 1, revealed=False)
        if self.round > 0:
            return replace(self, round=self.round - 1, stop=len(stops(rounds[self.round - 1])) - 1, draw=0,
                           revealed=False)
        return replace(self, stop=pos)

    def at_end(self, rounds: Sequence[Round], seed: int) -> bool:
        return not rounds or (self.round >= len(rounds) - 1 and self.view(rounds, seed).last)

    def tick(self, rounds: Sequence[Round], seed: int) -> StepState:
        """One step of play: forward without waiting for a guess; playing stops at the trace's end."""
        moved = replace(self, revealed=True).next(rounds, seed)
        return replace(moved, playing=self.playing and not moved.at_end(rounds, seed))

    def play(self, rounds: Sequence[Round]) -> StepState:
        """Play toggled (there is nothing to play without rounds)."""
        return replace(self, playing=not self.playing and bool(rounds))

    def guess(self, rounds: Sequence[Round], seed: int, accept: bool) -> tuple[StepState, bool | None]:
        """A guess at a test whose u is not shown yet: (the state with u shown, whether the guess was right).
        Anywhere else there is nothing to guess: (self, None)."""
        if rounds:
            v = self.view(rounds, seed, predict=True)
            if v.hidden:
                right = stop_decision(v.round, v.stop).accepted == accept
                return replace(self, stop=v.pos, revealed=True), right
        return self, None

    def redraw(self) -> StepState:
        """The next re-draw of u for this round, from its first stop."""
        return replace(self, draw=self.draw + 1 if self.draw < APP_MAX_DRAW else 1, stop=0, revealed=False)

    def recorded(self) -> StepState:
        """Back to the recorded u, from the round's first stop."""
        return replace(self, draw=0, stop=0, revealed=False)

    def go(self, round_index: int) -> StepState:
        """The first stop of a round (0-based), with its recorded u."""
        return replace(self, round=round_index, stop=0, draw=0, revealed=False)
