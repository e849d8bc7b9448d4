"""The Coup aggregate moved to ``services/trente_et_quarante/coup.py`` (its topics never
changed); this name stays for the code and the tests written before the move."""

from services.trente_et_quarante.coup import FATE_EVENTS, Coup, Phase

__all__ = ["FATE_EVENTS", "Coup", "Phase"]
