"""The verifier's chain walk hashes the bytes each link's signature was checked over for the
next link's ``prev`` (not encoded twice): the same as ``link_hash`` of its body, so a chain
that follows is found following and one that does not is found out, as before."""

from __future__ import annotations

import hashlib

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st
from sabot_verify.chain import LINK_PREFIX, Walk, key_id, link_hash
from sabot_verify.proofs import canonical
from sabot_verify.topics import CHAIN_LINKED

PRIVATE = Ed25519PrivateKey.from_private_bytes(bytes([7]) * 32)
PUBLIC = PRIVATE.public_key()
KEY_ID = key_id(PUBLIC.public_bytes_raw())


def _link(seq: int, prev: str, extra: dict[str, object]) -> dict[str, object]:
    body: dict[str, object] = {**extra, "seq": seq, "first": 0, "count": 0, "events": "",
                               "digest": hashlib.sha256(b"").hexdigest(), "prev": prev,
                               "key_id": KEY_ID}
    signature = PRIVATE.sign(LINK_PREFIX + canonical(body)).hex()
    return {"topic": CHAIN_LINKED, "state": {**body, "signature": signature}}


@settings(max_examples=60, deadline=None)
@given(extras=st.lists(st.dictionaries(st.sampled_from(["note", "site", "at", "é"]),
                                       st.one_of(st.integers(-2**70, 2**70), st.text(max_size=8)),
                                       max_size=3), min_size=1, max_size=5),
       broken=st.integers(0, 5))
def test_each_prev_is_the_link_hash_of_the_last(extras: list[dict[str, object]],
                                                broken: int) -> None:
    walk = Walk({KEY_ID: PUBLIC})
    prev = ""
    for seq, extra in enumerate(extras, 1):
        wrong = seq == broken and seq > 1
        link = _link(seq, "00" * 32 if wrong else prev, extra)
        walk.feed(seq, link)
        state = link["state"]
        assert isinstance(state, dict)
        body = {k: v for k, v in state.items() if k != "signature"}
        assert walk.prev == link_hash(body)
        prev = link_hash(body).hex()
    messages = [f.message for f in walk.findings]
    if 1 < broken <= len(extras):
        assert messages == [f"evidence chain: link {broken} does not follow link {broken - 1}"]
    else:
        assert messages == []
    assert sorted(walk.links) == list(range(1, len(extras) + 1))
