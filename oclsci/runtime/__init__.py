"""What knows about OpenCL platforms, devices and processes, and nothing about any solver.

- :mod:`~oclsci.runtime.device`: platforms, ``PYOPENCL_CTX``, ranks, contexts and queues;
- :mod:`~oclsci.runtime.programs`: Mako templates of ``kernels/`` rendered and built, memoised;
- :mod:`~oclsci.runtime.launch`: cheap launches of kernels whose arguments stay set;
- :mod:`~oclsci.runtime.pacing`: how far the host runs ahead of the device;
- :mod:`~oclsci.runtime.signals`: what SIGTERM, SIGUSR1, SIGINT and SIGHUP do;
- :mod:`~oclsci.runtime.health`, :mod:`~oclsci.runtime.icd`, :mod:`~oclsci.runtime.binding`:
  why a platform has no device, Intel's runtime from PyPI, GPUs given by Slurm;
- :mod:`~oclsci.runtime.cachedir`: where per-user caches live.

Solvers receive a :class:`~oclsci.runtime.device.ComputeContext`; they never enumerate
platforms. Nothing is imported here, so that ``oclsci.runtime.signals`` loads without NumPy.
"""
