# Source: github.com/karpathy/makemore makemore.py @ 988aa59e4d8fefa526d06f3b453ad116258398d4
# Changes: none to the program (makemore.py beside this file, with the changes its header lists);
#   this file runs it as its README's command lines do, once for each of four model types, 7 steps
#   each, with small widths.
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
COMMON = ["--max-steps", "7", "--num-workers", "0", "--n-embd2", "32", "--batch-size", "16"]
RUNS = [
    ["--type", "bow", "--n-embd", "32"],
    ["--type", "gru", "--n-embd", "32"],
    ["--type", "mlp", "--n-embd", "16"],
    ["--type", "transformer", "--n-layer", "2", "--n-embd", "32"],
]
for run in RUNS:
    sys.argv = ["makemore.py", *run, *COMMON]
    runpy.run_path(os.path.join(HERE, "makemore.py"), run_name="__main__")
