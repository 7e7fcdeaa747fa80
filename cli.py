#!/usr/bin/env python3
"""Thin entry point: ``python cli.py --help`` from a checkout (same code as ``sentient``)."""

import sys

from sentient_core.cli import main

if __name__ == "__main__":
    sys.exit(main())
