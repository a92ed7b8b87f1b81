import os
import sys

SIM_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "cluster", "sim"))
if SIM_DIR not in sys.path:
    sys.path.insert(0, SIM_DIR)
