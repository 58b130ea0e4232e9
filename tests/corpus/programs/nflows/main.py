# Source: github.com/karpathy/pytorch-normalizing-flows nflib1.ipynb (and nflib/) @ b60e119b37be10ce2930ef9fa17e58686aaf2b3d
# Changes: none to the programs beside this file (each header says how it was made from the
#   notebook): this file runs the notebook's neural spline flow, then its other model choices.
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)  # nflib, as the notebook imports it
for script in ("neural_spline.py", "flow_zoo.py"):
    runpy.run_path(os.path.join(HERE, script), run_name="__main__")
