"""Run a corpus program as `gradviz run` would run it, after seeding torch, random and numpy as the
corpus harness does (torch seeds itself from the OS at start-up, so an unseeded program draws
other numbers in every run of torch itself).

    gradviz run --engine torch|gradviz -o T.json tests/corpus/seeded.py PROGRAM [ARGS...]
"""

import os
import random
import runpy
import sys

import numpy as np
import torch

torch.manual_seed(0)
random.seed(0)
np.random.seed(0)
program = sys.argv[1]
sys.argv = [program, *sys.argv[2:]]
sys.path[0] = os.path.dirname(os.path.abspath(program))  # a program's own modules beside it, as python runs it
runpy.run_path(program, run_name="__main__")
