"""``fedbench bench``: how fast the simulator trains, measured against a per-client loop, centralized training,
an independent numpy loop and the machine's floor. It times the engine's own round (fedbench.engine.round) and
its own runs (fedbench.engine.simulation); it carries no copy of either.

- machine.py     peak matmul FLOP/s and memory bandwidth measured on the spot; FLOPs per training sample; the floor
- federation.py  the models measured (one line each) and synthetic federations of their input shape
- work.py        the samples and local steps a schedule holds, counted from the engine's round plan
- timing.py      paths timed in turn, round by round
- throughput.py  kernel throughput per model and cohort (issue 9)
- numpy_loop.py  FedAvg/FedProx on softmax regression as a plain numpy per-client loop
- studies.py     the studies the workload runs: FedProx's synthetic study at the paper's settings; a CNN study (GPU)
- workload.py    the papers' workload: a study's runs stacked, one by one, as the numpy loop, and the floor (issue 10)
- report.py      printed tables, reports/bench*/README.md, bench.json and figures
- cli.py         the command line
- proxies.py     the GPU targets as counts the CPU measures exactly, each target met or not (issue 49)
- drawn_cost.py  a study priced from its drawn schedule, chain by chain, on a measured paper-cost table (issue 49)
- gpu_proxies.py the GPU check's items that refit those proxies' calibration (issue 49)
- gpucheck.py    the prepared GPU check (issue 20): CUDA against the CPU for every algorithm and paper model, the
                 throughput at cohorts 10/100/1000, within a budget, importing torch and numpy only
"""

from fedbench.bench.cli import main

__all__ = ["main"]
