"""The one resource the assets use: where the lake is and which model embeds."""

from __future__ import annotations

import dagster as dg

from kbflow.config import Settings
from kbflow.lake import Lake


class KbflowResource(dg.ConfigurableResource):
    """kbflow settings for the assets.

    ``lake`` empty means ``$KBFLOW_LAKE`` or ``./data/lake``; ``model`` empty
    means the default model (all-MiniLM-L6-v2, offline); ``backend`` empty
    means the default backend; ``embed_threads`` 0 means the backend's default;
    ``engine`` empty means ``$KBFLOW_ENGINE``, else ``local`` (``ray``: the
    steps run on the Ray cluster ``$RAY_ADDRESS`` names); ``engine_actors`` 0
    means one embedding worker per node (or GPU) of the cluster.
    """

    lake: str = ""
    model: str = ""
    backend: str = ""
    embed_threads: int = 0
    engine: str = ""
    engine_actors: int = 0
    progress: bool = False

    def settings(self) -> Settings:
        return Settings.coerce(
            None,
            lake=self.lake or None,
            model=self.model or None,
            backend=self.backend or None,
            embed_threads=self.embed_threads or None,
            **({"engine": self.engine} if self.engine else {}),
            engine_actors=self.engine_actors or None,
        )

    def open_lake(self) -> Lake:
        return Lake(self.settings().lake)
