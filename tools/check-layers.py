#!/usr/bin/env python3
"""check-layers: the include layers of src/ flow downwards.
Thin entry point: the code is tools/pmulab/check_layers.py (`check-layers.py --help`).
"""

from pmulab.check_layers import cli

cli()
