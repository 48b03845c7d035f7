"""The step view's state without Gradio: walking, predicting, re-drawing u, playing.

(tests/test_strings.py checks that specviz.classroom.state imports neither Gradio nor torch.)"""
from __future__ import annotations

import copy
import dataclasses

import pytest

from specviz.classroom.state import StepState
from specviz.classroom.decisions import redraw
from specviz.classroom.steps import Cursor, at_end, move, stops
from specviz.limits import APP_MAX_DRAW

from rounds import bonus_round, rejected_round

SEED = 7
ROUNDS = [rejected_round(), bonus_round()]


def walk(state, rounds=ROUNDS, seed=SEED, predict=False):
    """Every (round, stop kind) Next visits from `state` until the end."""
    seen = []
    while True:
        v = state.view(rounds, seed, predict)
        seen.append((state.round, v.stop.kind))
        if state.at_end(rounds, seed):
            return seen, state
        state = state.next(rounds, seed, predict)


def a_shorter_redraw(rnd):
    """A draw whose round has fewer stops than the recorded one (the rejection moved earlier)."""
    return next(d for d in range(1, 200) if len(stops(redraw(rnd, SEED, d).round)) < len(stops(rnd)))


def test_walk_matches_the_cursor_on_recorded_rounds():
    state, cur = StepState(), Cursor()
    for _ in range(15):
        assert (state.round, state.stop) == (cur.round, cur.stop)
        assert state.at_end(ROUNDS, SEED) == at_end(ROUNDS, cur)
        state, cur = state.next(ROUNDS, SEED), move(ROUNDS, cur, +1)
    seen, end = walk(StepState())
    assert len(seen) == 6 + 5 and seen[5] == (0, "correction") and seen[6] == (1, "draft")
    assert end == StepState(1, 4) and end.next(ROUNDS, SEED) == end


def test_prev_crosses_back_to_the_previous_rounds_last_stop():
    assert StepState(1, 0).prev(ROUNDS, SEED) == StepState(0, 5)
    assert StepState(1, 3).prev(ROUNDS, SEED) == StepState(1, 2)
    assert StepState().prev(ROUNDS, SEED) == StepState()
    assert StepState(0, 99).view(ROUNDS, SEED).pos == 5   # a stop past the end is read as the last one


def test_predict_mode_shows_u_before_moving_on():
    at_test = StepState(0, 2)
    assert at_test.view(ROUNDS, SEED, predict=True).hidden
    shown = at_test.next(ROUNDS, SEED, predict=True)
    assert shown == StepState(0, 2, revealed=True) and not shown.view(ROUNDS, SEED, predict=True).hidden
    assert shown.next(ROUNDS, SEED, predict=True) == StepState(0, 3)
    assert at_test.next(ROUNDS, SEED, predict=False) == StepState(0, 3)


def test_a_guess_counts_only_at_a_hidden_test():
    state, right = StepState(0, 4).guess(ROUNDS, SEED, accept=False)   # draft 3 is rejected
    assert right is True and state.revealed
    assert state.guess(ROUNDS, SEED, accept=False) == (state, None)      # already shown
    assert StepState(0, 2).guess(ROUNDS, SEED, accept=False)[1] is False
    assert StepState(0, 0).guess(ROUNDS, SEED, accept=True) == (StepState(0, 0), None)
    assert StepState().guess([], SEED, accept=True) == (StepState(), None)


def test_redraw_goes_to_the_rounds_start_and_wraps():
    state = StepState(0, 3, revealed=True).redraw()
    assert state == StepState(0, 0, draw=1)
    assert state.view(ROUNDS, SEED).redrawn == redraw(ROUNDS[0], SEED, 1)
    assert StepState(draw=APP_MAX_DRAW).redraw().draw == 1
    assert StepState(0, 3, draw=4).recorded() == StepState(0, 0)
    assert StepState(1, 2, draw=3, revealed=True, playing=True).go(0) == StepState(0, 0, playing=True)


def test_next_leaves_a_redrawn_round_with_fewer_stops():
    """A re-draw can end a round earlier than the recording: Next at its end goes on to the next round."""
    draw = a_shorter_redraw(ROUNDS[0])
    seen, end = walk(StepState(draw=draw))
    n = len(stops(redraw(ROUNDS[0], SEED, draw).round))
    assert [s for s in seen if s[0] == 0] == [(0, s.kind) for s in stops(redraw(ROUNDS[0], SEED, draw).round)]
    assert seen[n] == (1, "draft") and end == StepState(1, 4)


def test_tick_plays_to_the_end_and_stops():
    state = StepState(0, 2).play(ROUNDS)
    assert state.playing and not StepState().play([]).playing and not state.play(ROUNDS).playing
    ticks = 0
    while state.playing:
        state, ticks = state.tick(ROUNDS, SEED), ticks + 1
    assert state.round == 1 and state.at_end(ROUNDS, SEED) and ticks == 11 - 3
    assert StepState().tick([], SEED) == StepState(revealed=True)


def test_state_is_frozen_and_survives_gradio_state_copies():
    state = StepState(1, 2, draw=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.round = 0                                   # type: ignore[misc]
    assert copy.deepcopy(state) == state                  # gr.State deep-copies its value per session

