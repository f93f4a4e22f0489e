"""The independent reference of the simulator's memory hierarchy, now the library of
tools/pmulab-cache (tools/pmulab/cache_policies.py): test_cache_model.py imports it by
this name."""

from pmulab.cache_policies import (HIT_AGE, Fifo, Hierarchy, Level, Lru, LruOfPlru4, Mru, Nru, OneWay,  # noqa: F401
                                   Plru, Qlru, SetSim, make_set, qlru_names)
