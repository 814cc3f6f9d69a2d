"""A model of `oclsci jacobi`'s time per step on P GPUs (docs/mpi.md, "A model of a run"),
checked against the 2- and 4-GPU runs of one 4x H200 host and used to predict a cluster.

    python3 benchmarks/mpi_model.py

Per rank and step, with 1-D slabs, exchange period S and the exchange overlapped:

    t_step = m_i n / R(m_i, n)  +  k c n  +  max(0, t_x - S m_i n / R) / S

m_i: the interior's rows (the slab less a strip of S + 1 rows per side that faces another
rank); R: the rate of `--kernel auto` on a grid of the interior's shape, one GPU alone
(benchmarks/slab_rates.py --auto-only), in 4 bands of rows where a rank's interior runs in
bands (8000 rows or more: benchmarks/queue_bands.py --bands 4); k: strips that face another
rank (1 or 2); c: what a strip costs per column and step (its launches, ghost rows and
copies), fitted on the 4-GPU weak run, the only fitted constant; t_x: one exchange
(device-to-host copy, the transfer, host-to-device copies into both buffers), hidden behind
the interior's S steps.
Measured inputs: docs/bench/h200x4-node-exchange-2026-11-27.md (rates and copies) and
docs/bench/h200x4-edge-copies-2026-11-28.md (the rates in bands, and the runs it is fitted
on and checked against). The model is
oclsci.mpi.plan's (the one `oclsci jacobi` chooses its plan with, from measured constants);
here with the H200 host's figures and the fitted strip cost.
"""

from __future__ import annotations

import dataclasses
import math

from oclsci.jacobi.specs.streaming import MIN_EXCHANGED_BAND_ROWS, QUEUE_BANDS
from oclsci.mpi import plan
from oclsci.mpi.plan import Constants, Run

# G cell updates/s of `--kernel auto` per interior shape (m, n), one H200 (slab_rates.py),
# measured at that shape or the nearest one run: 4079 rows for 4062 and 8159 for 8158,
# 16384^2 for 16350 and 16367 rows of 16384, 2048^2 and 8192^2 for the 2-D blocks.
RATE = {(222, 16384): 766.2, (478, 16384): 859.7, (990, 16384): 941.9,
        (2014, 16384): 1015.9, (4062, 16384): 1418.9, (8175, 16384): 1592.3,
        (16350, 16384): 1738.0, (16367, 16384): 1738.0, (8158, 32768): 1777.7,
        (990, 65536): 1470.9, (4062, 65536): 1780.6, (16350, 65536): 1983.7,
        (2014, 2048): 761.3, (8158, 8192): 1372.4}
# The same configuration in 4 bands of rows on queues of their own, one H200
# (queue_bands.py --bands 4), where a rank's interior runs so and measured there; 16367 rows
# stand for 16350. Elsewhere (65536 columns, the 2-D blocks) the rates on one queue.
BANDED = {(8175, 16384): 1739.2, (16367, 16384): 1883.1, (16350, 16384): 1883.1,
          (8158, 32768): 1874.9, (16384, 16384): 1884.0}
S = 16


def interior_rate(m: int, n: int) -> float:
    """G cell updates/s of an interior of ``m`` x ``n``: in bands where a rank runs it so
    (oclsci.jacobi.specs.streaming.queue_bands) and they were measured, else on one queue."""
    if m >= QUEUE_BANDS * MIN_EXCHANGED_BAND_ROWS and (m, n) in BANDED:
        return BANDED[(m, n)]
    return RATE[(m, n)]


# The 4-GPU weak run (65536 x 16384, 20000 steps): 148.058 us per step on the slowest rank.
WEAK_4 = 148.058
C = (WEAK_4 - 16350 * 16384 / interior_rate(16350, 16384) / 1e3) / (2 * 16384)  # us / column / step
# The host's constants (page-locked copies at 24 GB/s; the network's 12 GB/s and 5 us are
# the cluster's assumption) with the fitted strip cost; node-local hand-overs cost nothing
# in this model (zero on one node with shared memory).
H200 = Constants(launch_us=0.0, d2h_bytes_per_s=24e9, h2d_bytes_per_s=24e9,
                 node_bytes_per_s=math.inf, node_latency_us=0.0, network_bytes_per_s=12e9,
                 network_latency_us=5.0, ranks_per_node=4, strip_ns_per_column=C * 1e3)


def exchange_us(n: int, bytes_per_s: float, latency_us: float) -> float:
    """One exchange of S + 1 float32 rows of n columns with one neighbour: device to host
    (page-locked, 24 GB/s on that host), the transfer, host to device into both buffers."""
    constants = dataclasses.replace(H200, network_bytes_per_s=bytes_per_s,
                                    network_latency_us=latency_us)
    run = Run(rows=n, columns=n, strips=1, row_bytes=4 * n, rate=1.0, remote=True)
    return plan.exchange_us(constants, run, S)


def step_us(m_interior: int, n: int, strips: int, t_x: float = 0.0,
            rate: float | None = None) -> float:
    """Time per step of the slowest rank (microseconds): oclsci.mpi.plan's model of an
    overlapped run, the interior of ``m_interior`` rows at ``rate`` (G cells/s)."""
    run = Run(rows=m_interior + strips * (S + 1), columns=n, strips=strips, row_bytes=4 * n,
              rate=(rate or interior_rate(m_interior, n)) * 1e9)
    return plan.step_us(H200, run, S, True, t_x)


def main() -> None:
    print(f"fitted: c = {C * 1e3:.3f} ns per column and step per strip "
          f"({C * 16384:.2f} us at 16384 columns)\n")
    print("check against the runs (us per step, slowest rank):")
    # benchmarks/mpi_jacobi_scaling.sh 4 and 2, one call (the 4-GPU strong run on 16384^2
    # twice: the default and OCLSCI_QUEUE_BANDS=1 ran the same configuration).
    checks = [("2 GPUs weak, 32768 x 16384", step_us(16367, 16384, 1), 144.635),
              ("2 GPUs strong, 16384^2", step_us(8175, 16384, 1), 79.744),
              ("4 GPUs strong, 16384^2", step_us(4062, 16384, 2), 56.086),
              ("4 GPUs strong, 16384^2, again", step_us(4062, 16384, 2), 52.741),
              ("4 GPUs strong, 32768^2", step_us(8158, 32768, 2), 154.568)]
    for name, model, measured in checks:
        print(f"  {name}: model {model:.1f}, measured {measured:.1f} "
              f"({(model / measured - 1) * 100:+.1f}%)")
    # 16 nodes x 4 GPUs, 100 Gb/s InfiniBand (~12 GB/s a link, ~5 us latency): a rank at a
    # node's edge exchanges over the network; its neighbours inside the node wait for it.
    print("\n16 nodes x 4 H200, 100 Gb/s InfiniBand (us per step; efficiency against one GPU):")
    one = {16384: 16384 * 16384 / BANDED[(16384, 16384)] / 1e3,
           65536: 65536 * 65536 / RATE[(16350, 65536)] / 1e3}
    for n, ranks in ((16384, (4, 8, 16, 32, 64)), (65536, (4, 16, 64))):
        t_x = exchange_us(n, 12e9, 5.0)
        for p in ranks:
            m_i = n // p - 2 * (S + 1)
            t = step_us(m_i, n, 2, t_x if p > 4 else 0.0)
            print(f"  strong {n}^2, P={p}: {t:.1f} ({one[n] / (p * t) * 100:.0f}%)")
    t_x = exchange_us(16384, 12e9, 5.0)
    weak = step_us(16350, 16384, 2, t_x)
    print(f"  weak 16384^2 per GPU, any P >= 3: {weak:.1f} ({one[16384] / weak * 100:.0f}%)")
    # A 2-D grid of 8 x 8 blocks at P = 64: four strips per block, each as long as its edge.
    print("\n2-D blocks of (n/8)^2 at P = 64 (strips on four sides, c per column of edge):")
    for n in (16384, 65536):
        b = n // 8
        m_i = b - 2 * (S + 1)
        t_x = exchange_us(b, 12e9, 5.0)
        t = step_us(m_i, b, 4, t_x)
        print(f"  {n}^2: {t:.1f} ({one[n] / (64 * t) * 100:.0f}%)")


if __name__ == "__main__":
    main()
