"""The croupier's words (seeds 000, 004): totals by their units digit, the result in terms of
Rouge and Couleur."""

from __future__ import annotations

TOTAL_WORDS: dict[int, str] = {
    31: "un",
    32: "deux",
    33: "trois",
    34: "quatre",
    35: "cinq",
    36: "six",
    37: "sept",
    38: "huit",
    39: "neuf",
    40: "quarante",
}

# (Rouge wins, Couleur wins) -> the words; always said in terms of Rouge and Couleur (seed 004).
RESULT_WORDS: dict[tuple[bool, bool], str] = {
    (True, True): "Rouge gagne, et couleur",
    (True, False): "Rouge gagne, et la couleur perd",
    (False, False): "Rouge perd, et couleur",
    (False, True): "Rouge perd, et la couleur gagne",
}

VOID_WORDS = "Coup nul"


def total_word(total: int) -> str:
    """``31`` -> ``"un"``, ... ``40`` -> ``"quarante"``."""
    return TOTAL_WORDS[total]


def announce_decided(noir_total: int, rouge_total: int, rouge_wins: bool, couleur: bool) -> str:
    """E.g. ``"sept, huit. Rouge perd, et la couleur gagne"``."""
    return (
        f"{TOTAL_WORDS[noir_total]}, {TOTAL_WORDS[rouge_total]}. "
        f"{RESULT_WORDS[rouge_wins, couleur]}"
    )


def announce_refait(total: int) -> str:
    """A tie: ``"un après"`` at 31, ``"sept après"`` at 37."""
    return f"{TOTAL_WORDS[total]} après"


def announce_void() -> str:
    return f"{VOID_WORDS}, la carte rouge est sortie"
