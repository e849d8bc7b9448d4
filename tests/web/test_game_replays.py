"""The replays' bookkeeping without a browser: a Treinta y Una hand grows step by step with its
face-down cards as backs until a HandShown step shows them (and never a face the steps do not
give), a player's blank names kept apart by their cards' positions; a Cuarenta table after
each move and the score to 40."""

from __future__ import annotations

from typing import Any

from services.web.games import match_rows, round_frames


def _step(version: int, kind: str, **data: Any) -> dict[str, Any]:
    return {"version": version, "kind": kind, "data": data}


def test_a_hand_grows_face_down_until_shown() -> None:
    shown = {"hands": [{"player": "", "cards": [{"face_down": True}, {"position": 2}]},
                       {"player": "accounts/anne", "cards": [{"position": 1}]}]}
    steps = [_step(1, "Opened"), _step(2, "CardDealt", player="", position=0, commitment="c0"),
             _step(3, "CardDealt", player="anne", position=1, commitment="c1"),
             _step(4, "CardDrawn", player="", position=2, code="7C"),
             _step(5, "HandShown", player="", shown=[{"position": 0, "code": "1O"}])]
    frames = round_frames(shown, steps)
    assert [(f["version"], f["player"]) for f in frames] == [
        (2, "a player"), (3, "anne"), (4, "a player"), (5, "a player")]
    assert frames[0]["cards"] == [{"position": 0, "face_down": True, "code": ""}]
    assert [c["code"] for c in frames[2]["cards"]] == ["", "7C"]  # still face down
    assert [c["code"] for c in frames[3]["cards"]] == ["1O", "7C"]  # shown at the showdown
    assert frames[1]["cards"] == [{"position": 1, "face_down": True, "code": ""}]


def test_the_table_and_the_score_after_each_move() -> None:
    moves: list[dict[str, Any]] = [{"kind": "hand_begun"}, {"kind": "played", "card": "5D"},
             {"kind": "played", "card": "3S"}, {"kind": "played", "card": "2H"},
             {"kind": "captured", "card": "2H", "taken": ["3S"], "side": 0, "total": 2},
             {"kind": "hand_scored", "totals": [8, 6]}, {"kind": "won", "totals": [40, 6]}]
    rows = match_rows(moves)
    assert [r["table_after"] for r in rows] == [[], ["5D"], ["5D", "3S"], ["5D", "3S", "2H"],
                                                ["5D"], [], []]
    assert [r["points_after"] for r in rows][3:] == [[0, 0], [2, 0], [8, 6], [40, 6]]
