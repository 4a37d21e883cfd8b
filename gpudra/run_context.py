"""What every command's run shares, built once by the CLI from the options all commands have.

A command's request carries one `RunContext` beside its own fields, each a parsed core value:
the target release (a TargetVersion, never its text), the settings (a loaded Config, never the
path to one), where the cluster is (ClusterOptions, or None for no connection flags) and the day
waivers and vouches are judged on. No run reads the config file or the connection flags itself.
The CLI reads the clock once per run and passes it as `today`, and a command that runs another
(cutover's per-wave convert) passes its own context on, so that one run judges on one day; only
a library caller that gives no `today` gets the clock's date, read where `day` is asked.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpudra.cluster.options import ClusterOptions
    from gpudra.config import Config
    from gpudra.dra.versions import TargetVersion


def _no_config() -> Config:
    # Imported on use: the config module loads the rule catalogue, which a command on the
    # cluster alone may never need.
    from gpudra.config import Config

    return Config()


@dataclass(frozen=True)
class RunContext:
    # None: the command's own default (the release of the cluster it reads, or DEFAULT)
    target: TargetVersion | None = None
    config: Config = field(default_factory=_no_config)
    # None: no connection flag given; a command that reads a cluster reads every namespace of
    # the current kube context (gpudra.sources.live_session)
    cluster: ClusterOptions | None = None
    today: datetime.date | None = None  # the CLI's: date.today() at the run's start

    @property
    def day(self) -> datetime.date:
        """The day waivers and vouches are judged on: `today`, else (a library caller that
        gave none) the clock's date at each call."""
        return self.today or datetime.date.today()
