"""``ids.uuid5_text`` and ``ids.stake_id_text`` write exactly the text of the UUID the library's
``uuid5`` makes (a batch's stake ids are stored: they must not change), and refuse what it
refuses; ``Core.player_of`` answers as ``Core.player`` does."""

from __future__ import annotations

from uuid import uuid5

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.ledger.ids import NAMESPACE, stake_id_text, stake_uuid, uuid5_text


@settings(max_examples=500, deadline=None)
@given(name=st.text())
def test_uuid5_text_is_the_uuids_text(name: str) -> None:
    try:
        expected = str(uuid5(NAMESPACE, name))
    except UnicodeEncodeError:  # a lone surrogate: refused alike
        with pytest.raises(UnicodeEncodeError):
            uuid5_text(name)
        return
    assert uuid5_text(name) == expected


@settings(max_examples=300, deadline=None)
@given(coup=st.uuids().map(str), account=st.from_regex(r"[a-z0-9-]{1,64}", fullmatch=True),
       client=st.text(max_size=80), index=st.integers(0, 99))
def test_a_stake_id_text_is_its_uuids(coup: str, account: str, client: str, index: int) -> None:
    for name in (client, f"batch:{coup}:{index}"):
        try:
            expected = str(stake_uuid(coup, account, name))
        except UnicodeEncodeError:
            continue
        assert stake_id_text(coup, account, name) == expected


def test_every_variant_digit() -> None:
    # names whose hashes' 17th hex digit takes each of its 16 values
    seen: set[str] = set()
    for i in range(2000):
        text = uuid5_text(f"n{i}")
        assert text == str(uuid5(NAMESPACE, f"n{i}"))
        seen.add(text[19])
    assert seen == set("89ab")
