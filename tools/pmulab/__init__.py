"""pmulab's host-side Python tools as one package (tools/pmulab).

The scripts in tools/ (pmulab-client, pmulab-lab, pmulab-nanobench, pmulab-cache, pmulab-plot,
pmulab-events, pmulab-asm, pmulab-annotate, check-layers.py, qemu_run.py behind
run-qemu.sh) are thin entry points into these modules; Python's own script directory rule puts tools/ on the
path for them, and the tests get it from pytest.ini (`pythonpath = tools`). Only the
standard library is used (pmulab.plot: matplotlib).

  asm          --asm text -> machine code (llvm-mc or GNU as), campaign rewriting
  client       Agent: drive `pmulab serve` (QEMU, serial, TCP, pmulab-sim)
  client_cli   tools/pmulab-client
  qemu_run     run-qemu.sh: boot pmulab under QEMU + OVMF
  lab          tools/pmulab-lab: campaigns over configs x smp x CPU models
  nanobench    tools/pmulab-nanobench: nanoBench.sh's interface
  cache        tools/pmulab-cache: nanoBench's CacheAnalyzer (cache_seq: sequences to code,
               cache_target: the agent and the geometry, cache_policies: cacheSim.py's
               policies, cache_plot: the age graph)
  plot         tools/pmulab-plot (and the record reader the tools share)
  heatmap      pmulab-plot cycle-by-cycle
  annotate     tools/pmulab-annotate: samples records on the user's code (llvm-objdump)
  events       tools/pmulab-events: perfmon JSON -> pmulab event files
  check_layers tools/check-layers.py: the include layers of src/
"""

import os

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TOOLS)
