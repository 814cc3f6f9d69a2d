"""The exchange plan of a slab run chosen by a model of its time per step (docs/mpi.md, "A
model of a run" and "How the plan is chosen").

Per step of the slowest rank (a middle one, with a strip on each side that faces another
rank), with exchange period S:

    overlapped:  t = m_i n / R  +  strips  +  max(0, t_x - S m_i n / R) / S
    whole slabs: t = (m + k S) n / R  +  t_x / S

m_i: the interior's rows (the slab less S + 1 rows per strip); R: the interior kernel's rate
(cells per second); strips: their measured time per step at that period where timed
(:attr:`Run.strip_step_us`), else their launches at the measured launch cost and their cells
at the strip kernel's rate (or a fitted cost per column,
:attr:`Constants.strip_ns_per_column`), and once per period the copies between sub-slabs;
t_x: one exchange, the copies to the host,
the hand-over (through the node's shared window, or MPI) and the copies back. The measured
:class:`Constants` come from ``oclsci tune --mpi`` (:mod:`oclsci.mpi.constants`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

# Candidate periods: multiples of the kernels' steps per launch up to this many steps.
MAX_PERIOD = 64


@dataclass(frozen=True)
class Constants:
    """What a node's device and network measure (rates in bytes per second, times in us)."""

    launch_us: float
    d2h_bytes_per_s: float
    h2d_bytes_per_s: float
    node_bytes_per_s: float
    node_latency_us: float
    network_bytes_per_s: float
    network_latency_us: float
    ranks_per_node: int = 1
    d2d_bytes_per_s: float = math.inf
    strip_ns_per_column: float | None = None  # a fitted strip cost, in place of the parts

    def handover_us(self, nbytes: float, remote: bool) -> float:
        """One hand-over of ``nbytes`` between neighbours: over the network (MPI) when
        ``remote``, else through the node's shared window."""
        if remote:
            return self.network_latency_us + nbytes / self.network_bytes_per_s * 1e6
        return self.node_latency_us + nbytes / self.node_bytes_per_s * 1e6


@dataclass(frozen=True)
class Run:
    """The slowest rank's work: ``rows`` x ``columns`` owned cells, ``strips`` sides that
    face another rank, rows of ``row_bytes`` (padded) in ``levels`` buffers that travel, the
    interior kernel's ``rate`` and the strips' (cells per second), each kernel's steps per
    launch; ``remote``: a neighbour on another node; ``receive_buffers``: buffers that a
    received row is written into when overlapped (Jacobi: both of its two);
    ``strip_step_us``: one strip's device time per step (its launches included) by period,
    where timed."""

    rows: int
    columns: int
    strips: int
    row_bytes: int
    rate: float
    strip_rate: float | None = None
    steps_per_launch: int = 1
    strip_steps_per_launch: int = 1
    levels: int = 1
    remote: bool = False
    receive_buffers: int = 2
    strip_step_us: Mapping[int, float] | None = None


@dataclass(frozen=True)
class Plan:
    """A choice: exchange every ``period`` steps, ``overlapped`` or not, and the model's
    time per step (us)."""

    period: int
    overlapped: bool
    us_per_step: float

    def describe(self) -> str:
        """For the run's summary line."""
        how = "overlapped" if self.overlapped else "whole slabs"
        return (f"measured constants (period {self.period}, {how}), model "
                f"{self.us_per_step:.1f} us/step")


def exchange_us(constants: Constants, run: Run, period: int, *, neighbours: int | None = None,
                receive_buffers: int | None = None) -> float:
    """One exchange of S + 1 rows (Jacobi's ghost and fixed rows) per level with each of
    ``neighbours`` (default: the run's strips): the copies to the host one after the other,
    the hand-overs at once, the copies back into ``receive_buffers`` buffers each."""
    neighbours = run.strips if neighbours is None else neighbours
    buffers = run.receive_buffers if receive_buffers is None else receive_buffers
    nbytes = (period + 1) * run.row_bytes * run.levels
    out = neighbours * nbytes / constants.d2h_bytes_per_s * 1e6
    back = neighbours * buffers * nbytes / constants.h2d_bytes_per_s * 1e6
    return out + constants.handover_us(nbytes, run.remote) + back


def strips_us(constants: Constants, run: Run, period: int) -> float:
    """The strips' cost per step: a fitted cost per column; or their measured time at this
    period (:attr:`Run.strip_step_us`), else their launches and cells (their S + 1 owned rows
    where one launch makes the period: the launch writes only those; else all 2 S + 1 of
    their rows), and once per period the copies between sub-slabs (S + 1 rows each way, all
    of a rank's in one launch: oclsci.mpi.rowcopy)."""
    if constants.strip_ns_per_column is not None:
        return run.strips * constants.strip_ns_per_column * 1e-3 * run.columns
    copies = 2 * (period + 1) * run.row_bytes * run.levels / constants.d2d_bytes_per_s * 1e6
    timed = (run.strip_step_us or {}).get(period)
    if timed is None:
        rate = run.strip_rate or run.rate
        launches = constants.launch_us / run.strip_steps_per_launch
        rows = period + 1 if run.strip_steps_per_launch == period else 2 * period + 1
        timed = launches + rows * run.columns / rate * 1e6
    return run.strips * (timed + copies / period) + constants.launch_us / period


def step_us(constants: Constants, run: Run, period: int, overlapped: bool,
            t_x: float | None = None) -> float:
    """The model's time per step of the slowest rank (us); ``t_x``: one exchange's time
    (default: :func:`exchange_us`)."""
    t_x = exchange_us(constants, run, period) if t_x is None else t_x
    if not overlapped:
        cells = (run.rows + run.strips * period) * run.columns
        return cells / run.rate * 1e6 + t_x / period
    interior = max(0, run.rows - run.strips * (period + 1)) * run.columns / run.rate * 1e6
    return interior + strips_us(constants, run, period) + max(0.0, t_x - period * interior) / period


def candidate_periods(steps_per_launch: int, rows: int, strips: int, overlap: bool,
                      max_period: int = MAX_PERIOD) -> list[int]:
    """Multiples of ``steps_per_launch`` up to ``max_period`` (at least the first) that the
    slab holds: an interior at least as high as a strip when overlapped, S <= rows if not."""
    step = max(1, int(steps_per_launch))
    periods = []
    for period in range(step, max(step, max_period) + 1, step):
        if overlap and rows - strips * (period + 1) < period + 1:
            break
        if not overlap and period > rows:
            break
        periods.append(period)
    return periods


def choose_plan(constants: Constants, run: Run, *, overlap_possible: bool = True,
                max_period: int = MAX_PERIOD) -> Plan | None:
    """The fastest plan the model sees: every candidate period, overlapped (when possible:
    the slab has strips) or not; ties go to whole slabs, then to the shorter period. None
    when the slab holds no candidate."""
    steps = math.lcm(run.steps_per_launch, run.strip_steps_per_launch)
    best = None
    for overlapped in (False, True) if overlap_possible and run.strips else (False,):
        for period in candidate_periods(steps if overlapped else run.steps_per_launch,
                                        run.rows, run.strips, overlapped, max_period):
            plan = Plan(period, overlapped, step_us(constants, run, period, overlapped))
            if best is None or plan.us_per_step < best.us_per_step * (1 - 1e-9):
                best = plan
    return best
