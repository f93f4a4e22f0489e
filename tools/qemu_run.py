#!/usr/bin/env python3
"""Boots pmulab under QEMU + OVMF (the implementation of run-qemu.sh).
Thin entry point: the code is tools/pmulab/qemu_run.py (`qemu_run.py --help`).
"""

from pmulab.qemu_run import cli

cli()
